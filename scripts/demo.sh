#!/usr/bin/env bash
# The README's main job: set up, then run the orbital-registry demo project end to end on the
# embedded default (the project's warm local Spark server, Iceberg JDBC catalog on SQLite under
# .icetime/).
# With --cluster: the same demo through dbt-spark's thrift method on a Spark standalone cluster
# started on this machine (scripts/cluster.sh; PostgreSQL catalog), stopped at the end.
# With --lakehouse: the same demo on an Iceberg REST catalog whose tables live in S3 object
# storage, both servers started on loopback (tests/lakehouse.py) and stopped at the end.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-embedded}
case "$mode" in
  embedded) "$root/scripts/bootstrap.sh" ;;
  --cluster) "$root/scripts/bootstrap.sh" --with-postgres ;;
  --lakehouse) "$root/scripts/bootstrap.sh" ;;
  *) echo "usage: scripts/demo.sh [--cluster | --lakehouse]" >&2; exit 2 ;;
esac
# ICETIME_VENV and ICETIME_SPARK_LINE as for bootstrap.sh: the demo on Spark 3.5 is
# ICETIME_VENV=.venv-spark35 ICETIME_SPARK_LINE=3.5 ./scripts/demo.sh
export PATH="${ICETIME_VENV:-$root/.venv}/bin:$PATH"
cd "$root/integration_tests"
export DBT_PROFILES_DIR="$PWD"
where="$PWD/.icetime"
if [ "$mode" = --cluster ]; then
  cluster_dir="$root/.icetime-cluster"
  "$root/scripts/cluster.sh" down >/dev/null
  trap '"$root/scripts/cluster.sh" down' EXIT
  "$root/scripts/cluster.sh" up
  export DBT_PROFILES_DIR="$cluster_dir"  # profile icetime_demo: dev, replay, pr_42 on thrift
  where="the cluster's PostgreSQL catalog and $cluster_dir/warehouse"
fi
if [ "$mode" = --lakehouse ]; then
  lake_dir="$root/.icetime-lakehouse"
  lakehouse() { (cd "$root" && python -m tests.lakehouse "$@"); }
  stop_server() { python -m dbt.adapters.icetime.spark.server stop "$lake_dir/icetime" >/dev/null; }
  stop_server; lakehouse down "$lake_dir" && rm -rf "$lake_dir"
  # The warm server reads the REST catalog: stopped with it.
  trap 'stop_server; lakehouse down "$lake_dir"' EXIT
  # Starts both servers, writes $lake_dir/profiles.yml (the demo's targets on them) and prints
  # what those read: AWS_* keys, ICETIME_REST_URI, ICETIME_REST_CREDENTIAL, ICETIME_S3_ENDPOINT.
  eval "$(lakehouse up "$lake_dir")"
  export DBT_PROFILES_DIR="$lake_dir"
  where="the REST catalog at $ICETIME_REST_URI, its files in S3 at $ICETIME_S3_ENDPOINT"
fi

step() { printf '\n\033[1;36m== %s\033[0m\n$ %s\n' "$1" "$2"; eval "$2"; }

# A fresh registry every time: the demo's catalog and warehouse live in .icetime/ (a warm server
# from an earlier run serves that catalog: stopped first).
python -m dbt.adapters.icetime.spark.server stop .icetime >/dev/null
rm -rf .icetime target
started=$(date +%s)

step "Install the icetime macro package (packages.yml points at this repository)" "dbt deps"
step "Check the connection (starts the project's warm Spark server with Iceberg; no configuration
   beyond the profile; every later command connects to it)" \
  "dbt debug"
for batch in 1 2 3; do
  # The instant operators last saw the registry before batch 3 arrived.
  [ "$batch" = 3 ] && before_batch_3=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
  step "Ingest batch $batch of raw registry data (several Iceberg commits)" \
    "dbt run-operation ingest_batch --args '{batch: $batch}'"
  if [ "$batch" = 3 ]; then
    step "Write-audit-publish: build batch 3's marts into Iceberg branch 'batch_3' of each table
   and test them there; production's marts do not change" \
      "dbt build --vars '{wap_branch: batch_3}' --exclude resource_type:seed resource_type:snapshot path:models/cdf cdf_models_match_rebuild && cp target/run_results.json target/audit_batch_3.json"
    step "Production still shows batch 2; the branch shows batch 3" \
      "dbt show --inline \"select 'main' as ref, max(batches) as batches from {{ target.database }}.analytics.orbit_summary union all select 'batch_3', max(batches) from {{ target.database }}.analytics.orbit_summary version as of 'batch_3'\""
    step "Publish: the audit (its saved run results) passed every test, so main is fast-forwarded
   to the branch on every table" \
      "dbt run-operation icetime.publish --args '{branch: batch_3, results: target/audit_batch_3.json}'"
  fi
  if [ "$batch" = 3 ]; then
    step "Build and test staging views and marts, the CDF models forced incremental: the
   three read one upstream over one range, so they share one change read" \
      "dbt build --vars '{cdf_refresh: incremental}' && python \"$root/scripts/cdf_report.py\" target/run_results.json"
  else
    step "Build and test staging views and marts" "dbt build"
  fi
  if [ "$batch" = 2 ]; then
    step "How each CDF model ran (cdf_refresh: auto, the default): on a 40-row upstream a
   rebuild is cheaper for the keyed models; the change log read only the touched files" \
      "python \"$root/scripts/cdf_report.py\" target/run_results.json"
  fi
done
step "Anomaly replay: rebuild the registry as operators saw it just before batch 3 landed
   (every raw input read as of $before_batch_3, written to the 'replay' target's schema)" \
  "dbt run --target replay --select +registry --vars '{pin_snapshot: \"$before_batch_3\"}'"
step "What the replay read, recorded for reproduction (kept as target/replay_before_batch_3.json)" \
  "cat target/icetime_pins.json && cp target/icetime_pins.json target/replay_before_batch_3.json"
step "Then and now, side by side" \
  "dbt show --inline \"select 'as seen before batch 3' as registry, count(*) as objects, count_if(is_active) as active from {{ target.database }}.analytics_replay.registry union all select 'now', count(*), count_if(is_active) from {{ ref('registry') }}\""
step "Trace the anomaly: each commit of the registry says what built it in its own snapshot
   summary, readable by any engine (the latest two: batch 3's build and batch 2's)" \
  "dbt show --inline \"select snapshot_id, element_at(split(summary['icetime.node'], '[.]'), -1) as built_by, from_json(summary['icetime.inputs'], 'map<string, struct<snapshot_id: bigint>>')['icetime.raw.objects'].snapshot_id as read_raw_objects_at from {{ ref('registry') }}.snapshots order by committed_at desc\" --limit 2"
step "icetime.lineage follows the registry's batch 3 snapshot back through every table icetime
   built to the raw commits it came from: batch 3's commit of raw.objects" \
  "dbt run-operation icetime.lineage --args '{relation: analytics.registry}'"
step "Change feed: every change to raw objects since batch 1, by kind (decays are update pairs)" \
  "dbt show --inline \"select _change_type, count(*) as changes, count(distinct _commit_snapshot_id) as commits from {{ ref('object_changes') }} group by 1 order by 1\""
if [ "$mode" != --cluster ]; then
  step "The same change log as a Python model (models/cdf/object_changes_py.py reads
   dbt.changes(dbt.source('raw', 'objects'))): the same rows as the SQL one" \
    "dbt test --select python_change_log_matches"
fi
step "CDF models again with nothing new upstream: no data read, no commit" \
  "dbt run --select active_objects orbit_counts object_changes"
step "Active objects (CDF merge) and per-orbit counts (CDF recompute), equal to a rebuild" \
  "dbt test --select cdf_models_match_rebuild && dbt show --select orbit_counts"
step "Pull-request environment: zero-copy clones of every raw and analytics table (views
   recreated against them) in raw__pr_42 and analytics__pr_42, living 2 hours" \
  "dbt run-operation icetime.create_environment --args '{env: pr_42, ttl: 2h, from_schema: [raw, analytics], owner: demo}'"
step "A pull-request run beside it, deferring to production (--defer --state): its sources are the
   environment's clones (raw__pr_42, production's snapshots), so each unchanged table is
   production's build, cloned zero-copy, and only the views are made anew" \
  "mkdir -p target/prod_state && cp target/manifest.json target/prod_state/ && dbt run --target pr_43 --vars '{raw_schema: raw__pr_42, skip_unchanged: true}' --defer --state target/prod_state"
step "Change the environment: land batch 4 in its raw clones and rebuild its models there" \
  "dbt run-operation ingest_batch --args '{batch: 4}' --vars '{raw_schema: raw__pr_42}' && dbt run --target pr_42 --vars '{raw_schema: raw__pr_42}'"
step "Production did not move; the environment did" \
  "dbt show --inline \"select 'production' as env, count(*) as objects, count_if(is_active) as active from {{ target.database }}.analytics.registry union all select 'pr_42', count(*), count_if(is_active) from {{ target.database }}.analytics__pr_42.registry\""
step "What the environment costs: bytes shared with production, written by the clones, and held
   in production only by the clones' tags" \
  "dbt run-operation icetime.environment_report --args '{env: pr_42}'"
step "The janitor, dry run (the default): what it would drop" \
  "dbt run-operation icetime.drop_expired_environments --args '{env: pr_42, ignore_ttl: true}'"
step "The janitor: drop the environment, its tags and the files it wrote (production untouched)" \
  "dbt run-operation icetime.drop_expired_environments --args '{env: pr_42, ignore_ttl: true, dry_run: false}'"
step "Before a risky backfill, one tag on every raw table (replayable or restorable together)" \
  "dbt run-operation icetime.tag --args '{name: before-backfill, relation: [raw.objects, raw.observations], retain: 30d}'"
step "A bad backfill lands in raw.objects" "dbt run-operation bad_backfill"
step "icetime.diff finds it: rows only on one side, changed rows and which columns changed" \
  "dbt run-operation icetime.diff --args '{relation: raw.objects, from: \"tag:before-backfill\", key: object_id, rows: 3}'"
step "icetime.restore undoes it: metadata only, every file checked first, Delta's figures" \
  "dbt run-operation icetime.restore --args '{relation: raw.objects, to: \"tag:before-backfill\", dry_run: false}'"
step "The table's history, the restore marked" \
  "dbt run-operation icetime.history --args '{relation: raw.objects, limit: 4}'"
step "The CDF models read the restored table: it is the state they last read, so nothing to do" \
  "dbt run --select active_objects orbit_counts"
step "Monthly expiry with the history kept: expire what is over a minute old, except what tags,
   CDF watermarks, the saved replay's pins file and the newest snapshot hold (each listed with why)" \
  "dbt run-operation icetime.expire_snapshots --args '{relation: raw.objects, older_than: 1m, retain_last: 1, keep_history: 400d, keep_pins: [target/replay_before_batch_3.json], dry_run: false}'"
step "The saved replay still reproduces after the expiry (same snapshots, from its pins file)" \
  "dbt run --target replay --select +registry --vars '{pin_snapshot: \"@target/replay_before_batch_3.json\"}'"
step "Commits per month still answer after expiry (icetime.snapshots_with_expired)" \
  "dbt show --inline \"select date_trunc('month', committed_at) as month, count(*) as commits, count_if(expired) as expired, sum(cast(summary['added-records'] as bigint)) as rows_added from {{ icetime.snapshots_with_expired(source('raw', 'objects')) }} group by 1\""
step "Nightly run with build skipping: nothing landed since the last builds, so every model is
   dbt's no-op (no Spark job, no commit)" \
  "dbt run --vars '{skip_unchanged: true}'"
step "A late sensor feed lands: new observations only (raw.objects does not move)" \
  "dbt run-operation late_observations"
step "The plan: what a skipping run would build, and why (which input moved, from which snapshot)" \
  "dbt run-operation icetime.plan"
step "The nightly run builds only the marts whose sources moved" \
  "dbt run --vars '{skip_unchanged: true}'"
step "Two status changes land between two snapshot runs: object 5 starts maneuvering, then is
   retired (two commits to raw.objects)" \
  "dbt run-operation status_changes"
step "The object history (a dbt snapshot, strategy iceberg_history) reads only the commits since
   its watermark" \
  "dbt snapshot"
step "Every status change, each version valid from its own commit's time (the two changes that
   landed between runs included), next to the commit of raw.objects that made it (expired ones from icetime's history)" \
  "dbt show --inline \"select h.object_id, h.status, date_format(h.dbt_valid_from, 'HH:mm:ss.SSS') as valid_from, date_format(h.dbt_valid_to, 'HH:mm:ss.SSS') as valid_to, c.snapshot_id as made_by_commit, c.expired from {{ ref('object_history') }} h left join {{ icetime.snapshots_with_expired(source('raw', 'objects')) }} c on c.committed_at = h.dbt_valid_from where h.object_id in (2, 5) order by 1, 3\""
step "CDF through a join: tracked_observations (raw observations joined with raw objects, a
   unique_key, no changes()). One incremental run applies object 5's two status changes to
   every one of its observations, reading only the data files those commits touched" \
  "dbt run --select tracked_observations --vars '{cdf_refresh: incremental}' && dbt show --inline \"select object_id, status, count(*) as observations from {{ ref('tracked_observations') }} where object_id = 5 group by 1, 2\""
step "Objects per orbit class" "dbt show --select orbit_summary"
step "Closest approaches at the latest observation" \
  "dbt show --inline \"select * from {{ ref('conjunction_alerts') }} order by miss_distance_km\" --limit 5"
step "Iceberg history of the raw objects table" \
  "dbt show --inline \"select made_current_at, snapshot_id, is_current_ancestor from {{ source('raw', 'objects') }}.history order by made_current_at\""
step "dbt docs generate: each Iceberg table's current snapshot, snapshot count and recorded inputs,
   from its metadata (no data read), in the catalog's stats" \
  "dbt docs generate >/dev/null && python \"$root/scripts/catalog_stats.py\" target/catalog.json"

if [ "$mode" != --cluster ]; then
  step "The warm server every command above used: still running, for the next command; it exits
   by itself after 30 minutes idle (dbt run-operation icetime.stop_server stops it now)" \
    "dbt run-operation icetime.server_status"
fi

printf '\n\033[1mDemo finished in %ss.\033[0m Catalog and warehouse: %s\n' \
  "$(( $(date +%s) - started ))" "$where"

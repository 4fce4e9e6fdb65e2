{#- Expiry that keeps a history of what it expired, and the query that reads that history. -#}

{% macro expire_snapshots(model=none, relation=none, select=none, older_than='30d', retain_last=1, keep_history='400d', dry_run=true, keep_pins=none) %}
  {%- do icetime_check_arguments('expire_snapshots', kwargs, ['model', 'relation', 'select', 'older_than', 'retain_last', 'keep_history', 'dry_run', 'keep_pins']) -%}
  {{ return(adapter.dispatch('expire_snapshots', 'icetime')(model, relation, select, older_than, retain_last, keep_history, dry_run, keep_pins)) }}
{% endmacro %}

{% macro default__expire_snapshots(model, relation, select, older_than, retain_last, keep_history, dry_run, keep_pins) %}{{ icetime_requires_adapter('expire_snapshots') }}{% endmacro %}

{% macro icetime__expire_snapshots(model, relation, select, older_than, retain_last, keep_history, dry_run, keep_pins) %}
  {#- Expire snapshots older than `older_than` (a duration such as 30d, or a timestamp), keeping
      the last `retain_last` of main and every snapshot a tag, branch, clone, CDF watermark,
      configured pin or pins file holds (the project's target/icetime_pins.json and each file in
      `keep_pins`), listed with the reason. Each expired snapshot's metadata is kept in
      icetime_system.snapshot_history for `keep_history`. -#}
  {%- if execute %}{{ log(adapter.icetime_history_operation("expire_snapshots", graph, model, relation, select, older_than, retain_last, keep_history, dry_run, keep_pins), info=true) }}{% endif -%}
{% endmacro %}


{% macro snapshots_with_expired(relation) %}
  {{ return(adapter.dispatch('snapshots_with_expired', 'icetime')(relation)) }}
{% endmacro %}

{% macro default__snapshots_with_expired(relation) %}{{ icetime_requires_adapter('snapshots_with_expired') }}{% endmacro %}

{% macro icetime__snapshots_with_expired(relation) %}
  {#- A query over the live snapshots of `relation` and the ones icetime expired, with an
      `expired` flag: commits, summaries and commit times keep answering after expiry. -#}
  {%- set table = relation.incorporate(snapshot_id=none, projection=none) -%}
  {%- set archive = adapter.icetime_snapshot_archive() if execute else 'icetime_system.snapshot_history' -%}
  {%- set uuid = adapter.icetime_table_uuid(table) if execute else '' -%}
  (
    select committed_at, snapshot_id, parent_id, operation, manifest_list, summary,
           false as expired, cast(null as timestamp) as expired_at
    from {{ table }}.snapshots
    union all
    select committed_at, snapshot_id, parent_id, operation, manifest_list, summary,
           true as expired, expired_at
    from {{ archive }}
    where table_uuid = {{ adapter.icetime_quote_string(uuid) }}
      and snapshot_id not in (select snapshot_id from {{ table }}.snapshots)
  )
{%- endmacro %}

#!/usr/bin/env bash
# The README's test command: set up (PostgreSQL included, for the tests that start one), lint,
# type-check, then run a tier of the test suite (docs/testing.md).
#
#   ./scripts/test.sh [PYTEST ARGS]        the pull-request tier: every test on the default
#                                          deployment, each other deployment's own tests and
#                                          a short pass on it, property tests at short budgets
#   ./scripts/test.sh --all [PYTEST ARGS]  every deployment: the default at full budgets, then
#                                          the portable tests on each other deployment in turn,
#                                          then the pull-request tier on the other Spark line
#   ./scripts/test.sh --lane NAME [ARGS]   one deployment's lane of the all tier (no lint);
#                                          spark35: the pull-request tier on Spark 3.5
#
# Each lane's pytest writes its JUnit report (every test's duration) to .test-results/LANE.xml,
# and its time and exit status to .test-results/lanes.tsv. Extra arguments go to every pytest.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=pr
case "${1:-}" in
  --all) mode=all; shift ;;
  --lane) mode=lane; lane_name=${2:?--lane takes a deployment (server, rest, postgres, cluster, cluster_rest) or spark35}; shift 2 ;;
esac
"$root/scripts/bootstrap.sh" --with-postgres
export PATH="$root/.venv/bin:$PATH"
cd "$root"

results="$root/.test-results"
mkdir -p "$results"
if [ "$mode" != lane ]; then
  # The test JVMs' class-data archive (tests/jvm.py; made once per machine, ~20 s) and the warm
  # server's (recorded by a server started and stopped, ~40 s) are made while the linters run.
  python -c "from tests import jvm; jvm.ensure_archive(); jvm.ensure_server_archive()" &
  archive=$!
  echo "== ruff"; ruff check .
  echo "== mypy"; mypy
  wait "$archive" || true  # if it failed, the test run tries once more, then starts without it
  : > "$results/lanes.tsv"
fi

# One pytest run: parallel workers (each with its own Spark session and catalog; see
# tests/conftest.py), its report and its line in lanes.tsv. Returns pytest's status.
lane() {
  local name=$1 started status=0
  shift
  echo "== pytest: $name ($*)"
  started=$(date +%s)
  pytest -n "${ICETIME_TEST_WORKERS:-3}" --dist loadscope --durations=25 \
    --junitxml="$results/$name.xml" "$@" || status=$?
  printf '%s\t%s\t%s\n' "$name" "$(($(date +%s) - started))" "$status" >> "$results/lanes.tsv"
  return "$status"
}

# The other Spark line: the pull-request tier's tests on Spark 3.5, in a virtual environment of
# its own (docs/spark-lines.md).
other_line() {
  ICETIME_VENV="$root/.venv-spark35" ICETIME_SPARK_LINE=3.5 "$root/scripts/bootstrap.sh" --with-postgres
  PATH="$root/.venv-spark35/bin:$PATH" lane spark35 --deployment session --tier pr "$@"
}

# No other deployment's lane follows the pull-request tier: the two together took 50 minutes on
# CI, past the 40 that rotation was kept within; each lane runs in --all (docs/testing.md).
case "$mode" in
  pr)
    lane pr --tier pr "$@"
    ;;
  lane)
    if [ "$lane_name" = spark35 ]; then other_line "$@"
    else lane "$lane_name" --deployment "$lane_name" --tier all "$@"; fi
    ;;
  all)
    failed=()
    for deployment in session server rest postgres cluster cluster_rest; do
      lane "$deployment" --deployment "$deployment" --tier all "$@" || failed+=("$deployment")
    done
    other_line "$@" || failed+=(spark35)
    echo "== lanes (seconds, pytest's exit status)"
    awk -F"\t" '{ printf "%-14s %6s s  exit %s\n", $1, $2, $3 }' "$results/lanes.tsv"
    if [ ${#failed[@]} -gt 0 ]; then
      echo "failed: ${failed[*]}"
      exit 1
    fi
    ;;
esac

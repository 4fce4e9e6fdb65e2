#!/usr/bin/env bash
# The README's test command: set up (including PostgreSQL for the PostgreSQL-catalog tests),
# lint, type-check, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh" --with-postgres
export PATH="$root/.venv/bin:$PATH"
cd "$root"

# The test JVMs' class-data archive (tests/jvm.py; made once per machine, ~20 s) is made while
# the linters run.
python -c "from tests.jvm import ensure_archive; ensure_archive()" &
archive=$!
echo "== ruff"; ruff check .
echo "== mypy"; mypy
wait "$archive" || true  # if it failed, the test run tries once more, then starts without it
echo "== pytest"
# Parallel workers (each with its own Spark session and catalog); see tests/conftest.py.
exec pytest -n "${ICETIME_TEST_WORKERS:-3}" --dist loadscope "$@"

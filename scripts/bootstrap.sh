#!/usr/bin/env bash
# Set up everything icetime needs on a fresh machine, idempotently:
#   - a virtual environment in .venv with icetime and its pinned dependencies;
#   - Apache's jars of the installed Spark line (the Iceberg runtime, iceberg-aws-bundle, Hadoop's
#     S3A), fetched by Maven coordinates into icetime's jar cache (~/.cache/icetime/jars);
#   - the Debian JDBC jars the Iceberg catalog needs (installed with apt-get when running as
#     root, otherwise a message saying what to install).
# Usage: scripts/bootstrap.sh [--with-postgres]   (--with-postgres: also the PostgreSQL server
# and its JDBC driver, for the tests that start a real PostgreSQL catalog)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${ICETIME_VENV:-$root/.venv}
python=${PYTHON:-python3.11}
command -v "$python" >/dev/null 2>&1 || python=python3

say() { printf '\033[1m[icetime]\033[0m %s\n' "$*"; }
log="$root/.venv-install.log"
quietly() { "$@" >"$log" 2>&1 || { cat "$log"; say "failed: $*"; exit 1; }; }

debian_packages=()
[ -f /usr/share/java/sqlite-jdbc.jar ] || debian_packages+=(libxerial-sqlite-jdbc-java)
command -v java >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ] \
  || debian_packages+=(openjdk-17-jre-headless)
# javac compiles the REST catalog server the lakehouse tests and demo start (tests/servers/).
command -v javac >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] \
  || debian_packages+=(openjdk-17-jdk-headless)
if [ "${1:-}" = "--with-postgres" ]; then
  [ -f /usr/share/java/postgresql.jar ] || debian_packages+=(libpostgresql-jdbc-java)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || debian_packages+=(postgresql)
fi
# The Debian packages install beside the Python packages (on a fresh machine each takes a
# minute or two); the script waits for them before it ends.
apt_log="$root/.apt-install.log"
apt_job=
if [ ${#debian_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian packages: ${debian_packages[*]}"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      "${debian_packages[@]}") >"$apt_log" 2>&1 &
    apt_job=$!
  else
    say "missing system packages: ${debian_packages[*]}"
    say "install them with: sudo apt-get update && sudo apt-get install ${debian_packages[*]}"
    exit 1
  fi
fi

# A regular (not editable) install: what users get, and what `dbt init` can discover.
# Dependencies install once; icetime itself is reinstalled whenever its sources change.
[ -x "$venv/bin/python" ] || { say "creating $venv"; "$python" -m venv "$venv"; }
deps_stamp="$venv/.icetime-deps"
# The Spark line: 4.1 (the default) or 3.5 (ICETIME_SPARK_LINE=3.5, for the all tier's lane).
spark_line=${ICETIME_SPARK_LINE:-4.1}
deps_hash="$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1) pyspark $spark_line"
if [ ! -f "$deps_stamp" ] || [ "$(cat "$deps_stamp")" != "$deps_hash" ]; then
  say "installing Python packages (dbt-core 1.11, dbt-spark 1.11, PySpark $spark_line, pyiceberg 0.12)"
  quietly "$venv/bin/python" -m pip install --upgrade pip
  quietly "$venv/bin/python" -m pip install "$root[dev,thrift,bench]" "pyspark==$spark_line.*"
  echo "$deps_hash" > "$deps_stamp"
fi
src_stamp="$venv/.icetime-src"
src_hash=$(cd "$root" && find pyproject.toml adapter -type f ! -path '*__pycache__*' ! -path '*.egg-info*' \
  -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if [ ! -f "$src_stamp" ] || [ "$(cat "$src_stamp")" != "$src_hash" ]; then
  say "installing the icetime adapter from $root"
  quietly "$venv/bin/python" -m pip install --no-deps --force-reinstall "$root"
  rm -rf "$root/build" "$root"/adapter/*.egg-info
  echo "$src_hash" > "$src_stamp"
fi
if [ -n "$apt_job" ]; then
  wait "$apt_job" || { cat "$apt_log"; say "failed: apt-get install ${debian_packages[*]}"; exit 1; }
fi
# Apache's jars by coordinates, once per machine (each command would fetch what is missing).
say "fetching Apache's jars into the jar cache (if not there yet)"
quietly "$venv/bin/python" -m dbt.adapters.icetime.spark fetch

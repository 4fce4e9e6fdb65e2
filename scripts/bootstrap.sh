#!/usr/bin/env bash
# Set up everything icetime needs on a fresh machine, idempotently:
#   - a virtual environment in .venv with icetime and its pinned dependencies (and the AWS SDK
#     and Hadoop S3A jars for S3 storage, in .venv/share/icetime/aws-jars);
#   - the Debian JDBC jars the Iceberg catalog needs (installed with apt-get when running as
#     root, otherwise a message saying what to install).
# Usage: scripts/bootstrap.sh [--with-postgres]   (--with-postgres: also the PostgreSQL server
# and its JDBC driver, for the tests that start a real PostgreSQL catalog)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
python=${PYTHON:-python3.11}
command -v "$python" >/dev/null 2>&1 || python=python3

say() { printf '\033[1m[icetime]\033[0m %s\n' "$*"; }
log="$root/.venv-install.log"
quietly() { "$@" >"$log" 2>&1 || { cat "$log"; say "failed: $*"; exit 1; }; }

debian_packages=()
[ -f /usr/share/java/sqlite-jdbc.jar ] || debian_packages+=(libxerial-sqlite-jdbc-java)
command -v java >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/java" ] \
  || debian_packages+=(openjdk-17-jre-headless)
# mvn fetches jars from Maven Central by coordinates.
command -v mvn >/dev/null 2>&1 || debian_packages+=(maven)
# javac compiles the REST catalog server the lakehouse tests and demo start (tests/servers/).
command -v javac >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] \
  || debian_packages+=(openjdk-17-jdk-headless)
if [ "${1:-}" = "--with-postgres" ]; then
  [ -f /usr/share/java/postgresql.jar ] || debian_packages+=(libpostgresql-jdbc-java)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || debian_packages+=(postgresql)
fi
if [ ${#debian_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian packages: ${debian_packages[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debian_packages[@]}" >/dev/null
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
deps_hash=$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)
if [ ! -f "$deps_stamp" ] || [ "$(cat "$deps_stamp")" != "$deps_hash" ]; then
  say "installing Python packages (dbt-core 1.11, dbt-spark 1.11, PySpark 3.5, Iceberg 1.10, pyiceberg 0.12)"
  quietly "$venv/bin/python" -m pip install --upgrade pip
  quietly "$venv/bin/python" -m pip install "$root[dev,thrift,bench]"
  echo "$deps_hash" > "$deps_stamp"
fi
# Iceberg's S3FileIO needs the AWS SDK v2, which is not in the Iceberg runtime jar. PyPI's only
# copy of it as plain jars is inside bodo-iceberg-connector's wheel: download the wheel (never
# install it: it pins pyarrow) and keep the SDK's jars, leaving out the Netty client.
# Spark's own reads of files in object storage (a remote server reading a staged change set) go
# through Hadoop's S3A: hadoop-aws of the Hadoop in PySpark (3.3.4) and the modules of the AWS
# SDK v1 it calls, from Maven Central by coordinates.
aws_jars="$venv/share/icetime/aws-jars"
aws_wheel="bodo-iceberg-connector==2026.10"
s3a_artifacts=(org.apache.hadoop:hadoop-aws:3.3.4 com.amazonaws:aws-java-sdk-core:1.12.262
  com.amazonaws:aws-java-sdk-s3:1.12.262 com.amazonaws:aws-java-sdk-kms:1.12.262
  com.amazonaws:aws-java-sdk-dynamodb:1.12.262 com.amazonaws:jmespath-java:1.12.262)
aws_stamp="$aws_wheel ${s3a_artifacts[*]}"
if [ ! -f "$aws_jars/.complete" ] || [ "$(cat "$aws_jars/.complete")" != "$aws_stamp" ]; then
  say "installing the AWS SDK v2 jars for S3 storage (from $aws_wheel)"
  download=$(mktemp -d)
  quietly "$venv/bin/python" -m pip download --no-deps -q "$aws_wheel" -d "$download"
  rm -rf "$aws_jars" && mkdir -p "$aws_jars"
  "$venv/bin/python" - "$download" "$aws_jars" <<'PY'
import glob, os, re, sys, zipfile
download, target = sys.argv[1:]
(wheel,) = glob.glob(os.path.join(download, "bodo_iceberg_connector-*.whl"))
wanted = re.compile(r"bodo_iceberg_connector/jars/libs/"
                    r"((?!netty-nio-client)[a-z0-9-]+-2\.29\.26|reactive-streams-1\.0\.4|eventstream-1\.0\.1)\.jar")
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if wanted.fullmatch(name):
            with open(os.path.join(target, os.path.basename(name)), "wb") as out:
                out.write(archive.read(name))
PY
  rm -rf "$download"
  say "installing Hadoop's S3A jars from Maven Central (${s3a_artifacts[0]})"
  for artifact in "${s3a_artifacts[@]}"; do
    quietly mvn -B -q dependency:copy -Dartifact="$artifact" -Dtransitive=false \
      -DoutputDirectory="$aws_jars"
  done
  echo "$aws_stamp" > "$aws_jars/.complete"
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

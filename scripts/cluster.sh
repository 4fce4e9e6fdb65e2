#!/usr/bin/env bash
# A Spark standalone cluster on this machine, on 127.0.0.1 only: PostgreSQL (the Iceberg JDBC
# catalog), a Spark master, two workers and a Spark Thrift Server with Iceberg, from pyspark's
# own distribution. State, logs and the warehouse live in .icetime-cluster/.
# With --lakehouse the catalog is an Iceberg REST catalog over S3 instead (tests/lakehouse.py:
# SeaweedFS and Iceberg's REST handlers, on loopback), and the workers share the tables' files
# through S3.
# Usage: scripts/cluster.sh up [--workers N] [--lakehouse] | down | status
#   up     starts everything and writes .icetime-cluster/profiles.yml (profile icetime_cluster)
#   down   stops every process `up` started (by process id) and removes the catalog database
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
[ "${1:-}" = "down" ] || [ "${1:-}" = "status" ] || "$root/scripts/bootstrap.sh" --with-postgres
cd "$root"
exec "$root/.venv/bin/python" -m tests.cluster "$@"

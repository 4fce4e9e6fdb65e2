"""Where a file lives: in object storage or on a filesystem, and the name Hadoop's S3A gives an
object (Spark's own reads: a staged change set, a metadata file through Spark SQL)."""

from __future__ import annotations

OBJECT_STORE_SCHEMES = ("s3://", "s3a://", "s3n://")


def in_object_storage(location: str | None) -> bool:
    """Whether ``location`` (a warehouse, a table's location) is in object storage (S3)."""
    return (location or "").startswith(OBJECT_STORE_SCHEMES)


def hadoop_path(location: str) -> str:
    """``location`` as Spark's own file access (Hadoop's S3A) names it: ``s3a://`` for an
    ``s3://`` or ``s3n://`` object, which Iceberg's FileIO reads under any of the three."""
    for scheme in ("s3://", "s3n://"):
        if location.startswith(scheme):
            return "s3a://" + location.removeprefix(scheme)
    return location

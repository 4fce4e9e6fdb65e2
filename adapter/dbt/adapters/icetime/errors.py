"""icetime's exceptions and the text of every message a user can see.

All icetime errors derive from ``IcetimeError``, itself a ``DbtRuntimeError`` so dbt reports
them as ordinary run errors (non-zero exit, message shown once). Message templates live here so
the wording stays consistent and tests can refer to one place.
"""

from __future__ import annotations

from dbt_common.exceptions import DbtRuntimeError


class IcetimeError(DbtRuntimeError):
    """Base of every error icetime raises."""


class ConfigurationError(IcetimeError):
    """A profile or model configuration icetime cannot accept."""


class EnvironmentSetupError(IcetimeError):
    """Something the embedded Spark session needs is missing from the machine."""


class CatalogError(IcetimeError):
    """The Iceberg catalog could not answer; never taken to mean 'nothing there'."""


class MetadataError(IcetimeError):
    """Iceberg table metadata could not be read."""


class TableNotFoundError(MetadataError):
    """The catalog answered: there is no such Iceberg table (an answer, not a failure)."""


def bad_profile_value(key: str, value: object, accepted: str) -> ConfigurationError:
    """The error for a profile key whose value icetime cannot accept."""
    return ConfigurationError(BAD_PROFILE_VALUE.format(key=key, value=value, accepted=accepted))


UNKNOWN_PROFILE_KEYS = (
    "Unknown key(s) in the icetime profile: {keys}.{hints}\nAccepted keys: {accepted}."
)
BAD_PROFILE_VALUE = "Profile key '{key}' has the value {value!r}; accepted: {accepted}."
JAVA_MISSING = (
    "icetime's embedded Spark session needs Java 17, and no 'java' was found "
    "(JAVA_HOME={java_home!r}, PATH searched). Install it with "
    "'apt-get install openjdk-17-jre-headless' (or your platform's JDK 17) "
    "and make sure 'java' is on PATH or JAVA_HOME points at it."
)
JAR_MISSING = "The {what} jar was not found at {path}. {fix}"
SQLITE_JAR_FIX = (
    "Install it with 'apt-get update && apt-get install libxerial-sqlite-jdbc-java', "
    "or set 'sqlite_jdbc_jar' in the profile to a sqlite-jdbc jar."
)
POSTGRES_JAR_FIX = (
    "Install it with 'apt-get update && apt-get install libpostgresql-jdbc-java', "
    "or set 'postgres_jdbc_jar' in the profile to a PostgreSQL JDBC jar."
)
ICEBERG_JAR_FIX = (
    "Reinstall the Python package that carries it: "
    "pip install 'snowpark-connect-deps-iceberg==1.0.2' (1.0.3 is broken), "
    "or set 'iceberg_jar' in the profile."
)
DIR_NOT_WRITABLE = (
    "icetime cannot write its catalog directory {path}: {reason}. "
    "Make it writable, or point 'icetime_dir' (or 'warehouse' and 'catalog_uri') "
    "in the profile somewhere writable."
)
CATALOG_LOCKED = (
    "The Iceberg catalog database {where} is locked by another process (SQLite allows one "
    "writer at a time). Wait for the other dbt run or SQLite client to finish and retry, "
    "or use a PostgreSQL-backed catalog ('catalog_type: postgres') for concurrent use."
)
SESSION_CONFLICT = (
    "A Spark session is already running in this process with catalog '{catalog}' set to "
    "{existing!r}, but this profile asks for {wanted!r}. One Python process holds one Spark "
    "session: run this project in its own process, or use the same catalog settings."
)
LISTING_FAILED = (
    "icetime could not list the relations in {schema}: {reason}\n"
    "Refusing to continue: treating a failed listing as an empty schema could rebuild "
    "or replace existing tables."
)
FILE_FORMAT_NOT_ICEBERG = (
    "Model '{node}' sets file_format={value!r}, but icetime builds Apache Iceberg tables. "
    "Accepted: 'iceberg' (or leave file_format unset)."
)
PROTECTED_TARGET = (
    "pin_snapshot would replace {relation} in protected target '{target}' with history: {why}. "
    "A pinned run replays the past; write it somewhere else (dbt run --target <another target>, "
    "or a target whose schema differs), or, to overwrite anyway, add "
    "pin_allow_protected_overwrite: true to --vars."
)


class HistoryGapError(IcetimeError):
    """A CDF model's watermark cannot be followed to the upstream's pinned snapshot."""


HISTORY_GAP = (
    "CDF model {model} cannot read the changes of {table} since its watermark snapshot "
    "{watermark}: {reason}. Rebuild it with 'dbt run --full-refresh --select ...', or set "
    "on_history_gap: full_refresh on the model to rebuild automatically."
)
BAD_MODEL_CONFIG = "Model {model}: config '{key}' has the value {value!r}; accepted: {accepted}."
CDF_NOT_CONFIGURED = (
    "Model {model} uses {caller}, which needs materialized='incremental' and "
    "incremental_strategy='cdf'; it has materialized={materialized!r}, "
    "incremental_strategy={strategy!r}."
)
CDF_MERGE_NEEDS_KEY = (
    "CDF model {model} needs a unique_key to merge changes by (or cdf_mode: append for a change "
    "log, or cdf_recompute_keys for an aggregating model)."
)
CDF_WITHOUT_CHANGES = (
    "CDF model {model} does not read any upstream through icetime.changes(...); select from "
    "{{{{ icetime.changes(ref('...')) }}}}, or set cdf_recompute_keys for an aggregating model."
)
CHANGES_WITH_RECOMPUTE = (
    "Model {model} sets cdf_recompute_keys, so it is written as plain SQL over its upstreams: "
    "remove icetime.changes(...) and read ref()/source() directly."
)
CHANGES_TWO_UPSTREAMS = (
    "CDF model {model} reads the changes of two upstreams ({first} and {second}) without a "
    "unique_key: the changes of different tables can only be combined into one target by key. "
    "Set unique_key, or read one upstream's changes per model."
)
CDF_UPSTREAM_NOT_ICEBERG = (
    "CDF model {model} reads changes of {table}, which is not an Iceberg table in the catalog "
    "(a view, a non-Iceberg table, or missing). icetime.changes() accepts Iceberg tables only."
)
RECOMPUTE_WITHOUT_UPSTREAM = (
    "CDF model {model} sets cdf_recompute_keys but reads no Iceberg table through ref() or "
    "source() whose changes could name the keys to recompute."
)
RECOMPUTE_UPSTREAM_VIEW = (
    "CDF model {model} sets cdf_recompute_keys and reads {table}, a view: changes are tracked "
    "on Iceberg tables only. Materialize {table} as a table, or read its tables directly."
)
RECOMPUTE_KEYS_MISSING = (
    "CDF model {model}: cdf_recompute_keys names column(s) {missing} that upstream {table} does "
    "not have; every upstream must carry the keys so its changes say which groups to recompute."
)

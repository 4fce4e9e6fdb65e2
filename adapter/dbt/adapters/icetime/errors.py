"""icetime's exceptions and the text of every message a user can see.

All icetime errors derive from ``IcetimeError``, itself a ``DbtRuntimeError`` so dbt reports
them as ordinary run errors (non-zero exit, message shown once). A ``Refusal`` is icetime
deciding not to do something (bad input, an unsafe request): it is final and never retried.
Message templates live here so the wording stays consistent and tests can refer to one place.
"""

from __future__ import annotations

from dbt_common.exceptions import DbtRuntimeError


class IcetimeError(DbtRuntimeError):
    """Base of every error icetime raises."""


class Refusal(IcetimeError):
    """icetime refused a request on purpose: final, never retried."""


class ConfigurationError(Refusal):
    """A profile or model configuration, or an operation's argument, icetime cannot accept."""


class PinError(Refusal):
    """A point in history (a pin, a restore target, ...) that is malformed or cannot be
    resolved; nothing is built or changed."""


class EnvironmentSetupError(IcetimeError):
    """Something the embedded Spark session needs is missing from the machine."""


class ServerLostError(IcetimeError):
    """The warm local Spark server stopped while a command was using it."""


class CatalogError(IcetimeError):
    """The Iceberg catalog could not answer; never taken to mean 'nothing there'."""


class MetadataError(IcetimeError):
    """Iceberg table metadata could not be read."""


class TableNotFoundError(MetadataError):
    """The catalog answered: there is no such Iceberg table (an answer, not a failure)."""


class PythonModelError(IcetimeError):
    """A Python model's code raised, or returned what is not a DataFrame; nothing was written."""


class UnreadableRecord(Exception):
    """A build record is there but is not one icetime can trust (builds/record.py turns it into
    a build with the reason, or a ``MetadataError`` where it is read as it is)."""


# Words in a failure's text that mean another writer won a race, or the catalog was briefly
# busy: trying again may succeed. Anything else (a refusal, a missing table, bad SQL) is final.
TRANSIENT_MARKERS = (
    "CommitFailedException",
    "CommitStateUnknownException",
    "Cannot commit",
    "SQLITE_BUSY",
    "database is locked",
    "NotFoundException",
    "FileNotFoundException",
    "No such file",
    "Failed to open",
    "concurrent",
)


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a catalog race worth retrying (never an icetime refusal)."""
    if isinstance(exc, Refusal | TableNotFoundError):
        return False
    text = f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    return any(marker in text for marker in TRANSIENT_MARKERS)


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
SPARK_LINE_UNSUPPORTED = (
    "icetime runs on PySpark {lines}; this environment has PySpark {version}. "
    "Install a supported one, e.g. pip install 'pyspark==4.1.*' (or 'pyspark==3.5.*')."
)
RUNTIME_MISMATCH = (
    "The Iceberg runtime jar {jar} is built for {jar_line}, but this environment runs "
    "{spark}. Use the runtime of this line, {coordinate}: remove 'iceberg_jar' from the profile "
    "(icetime fetches it), or point it at that jar."
)
JARS_NOT_FETCHED = (
    "icetime could not fetch {coordinates} from {repository} ({reason}). Nothing is cached "
    "for them in {cache}. Once the repository answers, the next command fetches them. With a "
    "mirror of your own, set 'maven_repository' in the profile; with jars of your own, set "
    "'iceberg_jar' (the Iceberg runtime) and 'object_storage_jars' (S3) to their files."
)
IVY_MISSING = (
    "PySpark's Ivy jar, which icetime fetches Apache's jars with, is not in {where}. "
    "Reinstall PySpark, or set 'iceberg_jar' (and 'object_storage_jars' for S3) in the profile."
)
FETCHED_JAR_FIX = (
    "icetime fetches it from the Maven repository ('maven_repository' in the profile, Maven "
    "Central by default) into its jar cache; remove the file's partial copy if any, and run "
    "the command again, or set the jar's profile key to a file of your own."
)
JAR_FIXES = {
    "sqlite_jdbc_jar": SQLITE_JAR_FIX,
    "postgres_jdbc_jar": POSTGRES_JAR_FIX,
    "iceberg_jar": "Point 'iceberg_jar' at an Iceberg Spark runtime jar, or remove it: icetime "
    "then fetches the runtime of the installed Spark.",
    "object_storage_jars": "Point 'object_storage_jars' at existing jars, or remove it: "
    "icetime then fetches iceberg-aws-bundle and Hadoop's S3A.",
}
DIR_NOT_WRITABLE = (
    "icetime cannot write its catalog directory {path}: {reason}. "
    "Make it writable, or point 'icetime_dir' (or 'warehouse' and 'catalog_uri') "
    "in the profile somewhere writable."
)
CATALOG_CONNECTION_ENDED = (
    "The database of the Iceberg catalog at {where} ended the catalog's connection (it was "
    "stopped or restarted): {reason}. Nothing was written. Once the database answers, the next "
    "command connects again."
)
CATALOG_LOCKED = (
    "The Iceberg catalog database {where} is locked by another process (SQLite allows one "
    "writer at a time). Wait for the other dbt run or SQLite client to finish and retry, "
    "or use a PostgreSQL-backed catalog ('catalog_type: postgres') for concurrent use."
)
SERVER_START_FAILED = (
    "icetime's local Spark server for {directory} did not start: {reason}\n"
    "Its log is {log}. To run without it, set 'server: false' in the profile (each command "
    "then starts Spark in its own process)."
)
SERVER_NOT_RUNNING = (
    "No icetime server is running for {directory}. Any dbt command of the project that needs "
    "Spark starts it: run `dbt debug` there first."
)
SERVER_NEEDS_JAVAC = (
    "icetime's local Spark server compiles a few small classes once per machine with 'javac', "
    "and none was found (JAVA_HOME={java_home!r}, PATH searched). Install a JDK with "
    "'apt-get install openjdk-17-jdk-headless' (scripts/bootstrap.sh does), or set "
    "'server: false' in the profile to run Spark inside each command."
)
SERVER_CLASSES_COMPILE = "icetime could not compile its local Spark server's classes: {reason}"
SERVER_LOST = (
    "icetime's local Spark server (pid {pid}, port {port}) stopped during this command: "
    "{reason}\nThe statement may or may not have run; the next command starts a new server. "
    "Its log is {log} ({previous} once a new server has started)."
)
BAD_IDLE_TIMEOUT = "a duration such as 30m, 90s, 2h (at least 10s, at most 7d)"
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
BAD_TBLPROPERTIES = (
    "{node}: tblproperties must map property names to text, numbers or booleans; got {value!r}."
)
ICETIME_TBLPROPERTY = (
    "{node}: tblproperties sets {key!r}, which icetime itself keeps; remove it from the model's "
    "tblproperties."
)
PROTECTED_TARGET = (
    "pin_snapshot would replace {relation} in protected target '{target}' with history: {why}. "
    "A pinned run replays the past; write it somewhere else (dbt run --target <another target>, "
    "or a target whose schema differs), or, to overwrite anyway, add "
    "pin_allow_protected_overwrite: true to --vars."
)


CATALOG_UNREACHABLE = (
    "icetime could not open the database of the Iceberg catalog '{catalog}' at {uri}: {reason}"
)
REST_UNREACHABLE = (
    "icetime could not open the Iceberg REST catalog '{catalog}' at {uri}{warehouse} (profile "
    "keys catalog_uri, warehouse and catalog_properties): {reason}"
)
BUCKET_MISSING = (
    "The bucket '{bucket}' of warehouse '{warehouse}' (profile key warehouse) does not exist at "
    "{endpoint}. Create it, or point warehouse at an existing bucket."
)
REST_REQUEST_FAILED = "The Iceberg REST catalog '{catalog}' failed {what}: {reason}"
LOOKUP_FAILED = "Could not look up {table} in the Iceberg catalog '{catalog}': {reason}"
TABLE_MISSING_IN = "Iceberg table {table} does not exist in catalog '{catalog}'."
TABLE_MISSING = "Iceberg table {table} does not exist."
SPARK_METADATA_UNREADABLE = "Could not read the metadata of {table} through Spark SQL: {reason}"
METADATA_COMPRESSED = (
    "The metadata file {file} of {table} is compressed, which Spark SQL cannot read as text: use "
    "metadata_access: pyiceberg with a catalog the client can open."
)
METADATA_INVALID = (
    "The metadata file {file} of {table} is not valid Iceberg table metadata: {reason}"
)
LISTING_FROM_CATALOG_FAILED = "Could not list {what} in catalog {catalog}: {reason}"
METADATA_FILE_UNREADABLE = "Could not read metadata file {file}: {reason}"
CATALOG_FILE_UNOPENABLE = "Cannot open the Iceberg catalog database {path}: {reason}"


class HistoryGapError(Refusal):
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
CDF_READ_PATH_REMOVED = (
    "Model {model}: config 'cdf_read_path' ({value!r}) was removed: change rows are always read "
    "from the files each commit touched. To choose between an incremental run and a rebuild, "
    "set cdf_refresh; accepted: auto, incremental, full."
)
CDF_MERGE_NEEDS_KEY = (
    "CDF model {model} needs a unique_key to merge changes by (or cdf_mode: append for a change "
    "log, or cdf_recompute_keys for an aggregating model)."
)
CDF_WITHOUT_CHANGES = (
    "CDF model {model} reads no Iceberg upstream: read its tables with ref() or source() (with a "
    "unique_key, the model is kept equal to its query), or select from "
    "{{{{ icetime.changes(ref('...')) }}}}."
)
CDF_QUERY_KEY_NOT_UNIQUE = (
    "CDF model {model}: its query gives {count} rows for unique_key {key}; the unique_key must "
    "name one row of the query's output. Nothing was written to {target}. Make the key unique "
    "(group by it, or keep one row per key), or set the unique_key to the query's grain."
)
CDF_QUERY_UPSTREAM_VIEW = (
    "CDF model {model} reads {table}, a view: a model kept equal to its query reads the changes "
    "of Iceberg tables only. Materialize {table} as a table (or an incremental model), or read "
    "its tables directly."
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
CDF_UPSTREAM_NOT_YET = (
    "CDF model {model} reads changes of {table}, which is not (yet) an Iceberg table in the "
    "catalog: compiled as a plain read of it with null change columns. Running the model "
    "needs the Iceberg table."
)
RECOMPUTE_WITHOUT_UPSTREAM = (
    "CDF model {model} sets cdf_recompute_keys but reads no Iceberg table through ref() or "
    "source() whose changes could name the keys to recompute."
)
RECOMPUTE_UPSTREAM_VIEW = (
    "CDF model {model} sets cdf_recompute_keys and reads {table}, a view: changes are tracked "
    "on Iceberg tables only. Materialize {table} as a table, or read its tables directly."
)
CDF_STATE_UNREADABLE = (
    "The CDF state of {table} ('{key}') cannot be read: {reason}. Rebuild the "
    "model with --full-refresh to start a new watermark."
)
CDF_RECOVERING = (
    "{target} was written after its last recorded watermark (an interrupted run?): re-applying "
    "the changes since that watermark."
)
CDF_RECOVERING_REBUILD = (
    "{target} was written after its last recorded watermark by an interrupted run; a later "
    "commit may have undone a change that run applied"
)
# Why a grouped model's run rebuilds its group state (planners/grouped.py): run reasons.
GROUPS_MISSING = (
    "its group state {table} does not exist (a first run that keeps it, or the last run was a "
    "rebuild chosen by cost, which builds the model's table alone)"
)
GROUPS_OTHER_PLAN = "its group state {table} was built for another query"
GROUPS_OUT_OF_STEP = (
    "its group state {table} does not hold the watermarks of {target} (a run stopped between "
    "their writes, or one of them was restored or rebuilt by other means)"
)
GROUPS_NEGATIVE = (
    "The group state {table} does not match the changes of its upstreams (a group's row count "
    "fell below 0); nothing was written to {target}. Rebuild it: dbt run --full-refresh."
)
SNAPSHOT_HISTORY_GAP = (
    "Snapshot {model} cannot read the commits of {table} since its watermark snapshot "
    "{watermark}: {reason}. Set on_history_gap: full_refresh on the snapshot to rebuild "
    "{target} from the retained history, or drop {target} and run dbt snapshot again."
)
BAD_SNAPSHOT_CONFIG = (
    "Snapshot {model} (strategy iceberg_history): config '{key}' has the value {value!r}; "
    "accepted: {accepted}."
)
HISTORY_START_EXPIRED = (
    "history_start {start!r} is before snapshot {snapshot} of {table} (committed {committed}), "
    "the oldest one it retains; the commits before it have expired, so the history from "
    "{start!r} cannot be rebuilt. Accepted: a history_start at or after {committed}, or none "
    "(the history then starts at snapshot {snapshot})."
)
HISTORY_NOT_ICEBERG = (
    "Snapshot {model} (strategy iceberg_history) reads {table}, which is not an Iceberg table "
    "(a view, a table in another format, or missing); its versions are built from an Iceberg "
    "table's commits. Accepted: a source() or ref() of an Iceberg table."
)
HISTORY_TWO_TABLES = (
    "Snapshot {model} (strategy iceberg_history) reads {first} and {second}; it versions the "
    "rows of one Iceberg table. Accepted: a query over a single source() or ref()."
)
HISTORY_NO_TABLE = (
    "Snapshot {model} (strategy iceberg_history) reads no table through source() or ref(); "
    "set relation: source(...) or ref(...), or select from one in the snapshot's SQL."
)
HISTORY_CHANGE_COLUMNS = (
    "Snapshot {model} (strategy iceberg_history) must pass {missing} through its query (its "
    "SQL runs over each commit's changed rows: select * from the relation, or list them); "
    "its query returns only: {names}."
)
HISTORY_COLUMNS_MISSING = (
    "Snapshot {model}: config '{key}' names column(s) {missing} that its query does not "
    "return; it returns: {names}."
)
HISTORY_TABLE_COLUMNS = (
    "Snapshot {model}: the existing table {target} has no column(s) {missing}, which every "
    "snapshot table has; it cannot be continued. Rebuild it: drop {target} (or rename it to "
    "keep it) and run dbt snapshot; the history is rebuilt from the retained commits of {table}."
)
HISTORY_RECOVERING = (
    "{target} was written after its last recorded run (an interrupted run?): rolling it back "
    "to snapshot {snapshot}, where that run started, and applying the commits since the "
    "watermark again."
)
HISTORY_RECOVERY_LOST = (
    "Snapshot {model}: {target} was written after its last recorded run, and snapshot "
    "{snapshot}, where that run started, is no longer among its ancestors (now at snapshot "
    "{current}), so the interrupted write cannot be taken back. Drop {target} and run dbt "
    "snapshot to rebuild it from the retained history."
)
DUPLICATE_KEY = "icetime: snapshot {model}: unique_key ({keys}) is not unique in {table}: key "
CDF_JOIN_SHAPE = (
    "CDF model {model} cannot be kept equal to its query from its upstreams' changes: the query "
    "has {construct}. Accepted: projections, filters, inner and left joins, left semi joins, "
    "union and union all, subqueries in FROM over its upstreams, exists, not exists and in "
    "(select ...) over one upstream tied to one table by equalities, and at the top of the query "
    "a group by, or a window, over every unique_key column. Rewrite the query, or make the model "
    "a table."
)
CDF_JOIN_NOT_UPSTREAM = (
    "CDF model {model} reads {table}, which is not one of its Iceberg upstreams (a ref() or "
    "source() of an Iceberg table in the catalog): changes are read from those only. Read the "
    "table through ref() or source(), or materialize a view upstream as a table."
)
RECOMPUTE_KEYS_MISSING = (
    "CDF model {model}: cdf_recompute_keys names column(s) {missing} that upstream {table} does "
    "not have; every upstream must carry the keys so its changes say which groups to recompute."
)


# -- names and points in history (metadata/) --------------------------------------------------

EMPTY_NAME_PART = "An Iceberg {part} name cannot be empty."
NOT_A_TABLE_NAME = "{text!r} is not a table name icetime recorded."
RELATION_NOT_A_TABLE = "{relation} does not name an Iceberg table (schema.table)."
POINT_FORMS = (
    "an ISO-8601 timestamp (2026-04-21T06:00:00Z; no offset means UTC), "
    "a snapshot id (a positive integer), tag:NAME or branch:NAME"
)
PIN_FORMS = (
    "an ISO-8601 timestamp (2026-04-21T06:00:00Z; no offset means UTC), "
    "a snapshot id (a positive integer), tag:NAME, branch:NAME, "
    "a mapping {<source, relation or model name>: <one of these>}, "
    "@PATH to a pins file written by an earlier run (e.g. @target/icetime_pins.json), "
    "or built:<relation>@<snapshot id> for the inputs that built that snapshot"
)
NOT_A_POINT = "{where}: {value!r} is not a pin. Accepted forms: {forms}."
BAD_REF_NAME = (
    "{where}: {value!r} is not a valid {kind} name. Iceberg {kind} names in a pin are 1-255 "
    "letters, digits, '_', '.' or '-', starting with a letter or digit. Accepted forms: {forms}."
)
BAD_SNAPSHOT_ID = (
    "{where}: {value!r} is not a snapshot id (a positive 64-bit integer). Accepted forms: {forms}."
)
BAD_PIN_KEY = (
    "{origin}: mapping key {key!r} must name a source (source.table), a relation "
    "(schema.table or catalog.schema.table) or a model. Accepted forms: {forms}."
)
POINT_IN_FUTURE = "{named} {point} for {table} is in the future ({since} {now})."
NO_SUCH_SNAPSHOT = (
    "{named} {point}: no such snapshot in {table} (expired or never existed). {retained}"
)
INSTANT_NOT_RETAINED = "{named} {point} for {table}: expired or never existed. {retained}"
NO_SUCH_REF = "{named} {point}: {table} has no {kind} '{name}' ({plural} it has: {known})."
NO_SNAPSHOTS = "{table} has no snapshots."
RETAINED_SNAPSHOTS = (
    "The oldest retained snapshot of {table} is {oldest} at {oldest_at}; the newest is "
    "{newest} at {newest_at} ({count} retained)."
)
INSTANT_UNKNOWN = (
    "{named} {point} for {table}: which snapshot was current then cannot be known exactly. "
    "The table's snapshot log before {trimmed} was trimmed by an expiry that icetime did not "
    "record (Iceberg's expire_snapshots called directly, say), so a restore or rollback there "
    "would be invisible. Name a snapshot id or a tag instead. {retained}"
)
INSTANT_EXPIRED = (
    "{named} {point} for {table}: snapshot {snapshot}, committed at {committed}, was "
    "current then, and it has expired (icetime's archive of expired snapshots records it). The "
    "nearest retained snapshots: {nearest}."
)

# Operations that delete or move data (restore, expire_snapshots, the janitor) preview unless
# told dry_run: false.
DRY_RUN = "Dry run: nothing was changed. Pass dry_run: false to {what}."

# -- arguments (args.py) -------------------------------------------------------------------------

REQUIRED = "{operation} needs `{argument}`: {accepted}."
BAD_FLAG = "Argument {name}={value!r} is not accepted: use true or false."
BAD_DURATION = (
    "{what} {value!r} is not accepted: use a positive whole number followed by s "
    "(seconds), m (minutes), h (hours), d (days) or w (weeks), e.g. 7d, 36h or 90s."
)
DURATION_OUT_OF_RANGE = (
    "{what} {value!r} is not accepted: it must be {low} seconds and at most {days} days."
)
BAD_NAMES = (
    "Argument {argument}={value!r} is not accepted: give a name, a list of names, "
    "or a space- or comma-separated string of names."
)
NOT_POSITIVE = "{name}={value!r} is not accepted: a whole number >= 1."

# -- clone environments (clones/) ----------------------------------------------------------------

BAD_ENV_NAME = (
    "Environment name {value!r} is not accepted: use 1-63 lowercase letters, digits or '_', "
    "starting with a letter (it becomes part of schema names: <schema>{separator}<env>)."
)
BAD_OWNER = "Owner {value!r} is not accepted: use 1-200 printable characters."
BAD_STATE_MANIFEST = (
    "state={state!r}: could not read a dbt manifest at {path}: {reason}. Pass the directory of "
    "a production run's target/ (the one holding manifest.json)."
)
SELECT_MATCHED_NOTHING = "select: {patterns} matched no table or view. Available: {available}."
CLONE_NAME_NOT_PLAIN = (
    "Cannot clone {role} {name}: icetime clones tables whose catalog, schema and table names "
    "are letters, digits and '_' only; {part!r} is not."
)
CLONE_OTHER_CATALOG = (
    "Cannot clone {role} {name}: it is not in the Iceberg catalog '{catalog}' (catalog "
    "'{other}'). Clones are made of, and into, Iceberg tables of the profile's catalog."
)
CLONE_SOURCE_NOT_ICEBERG = (
    "Cannot clone {source}: it is not an Iceberg table in the catalog (missing, a view, or "
    "another format). Clones are made of Iceberg tables."
)
SOURCE_HAS_CLONES = (
    "Refusing to drop {name}: {count} clone(s) read its files and would break:\n{listed}\n"
    "Drop them first (dbt run-operation icetime.drop_expired_environments --args "
    "'{{env: <env>, ignore_ttl: true, dry_run: false}}'), or force the drop with "
    "--vars '{{icetime_force_drop: true}}'."
)
CLONE_LOCATION_MISMATCH = (
    "{name} records location {recorded} but lives at {actual}: refusing to delete files of a "
    "location it may not own."
)
ENV_SELECTION_EMPTY = "Environment {env!r}: the selection matched no table or view to clone."
ENV_EXISTS = (
    "Environment {env!r} already exists ({where}). Pass replace: true to rebuild it, or drop it "
    "first with dbt run-operation icetime.drop_expired_environments --args "
    "'{{env: {env}, ignore_ttl: true, dry_run: false}}'."
)
ENV_VIEWS_FAILED = "Environment {env!r}: could not recreate view(s) against the clones: {listed}"
ENV_UNKNOWN = (
    "Environment {env!r} does not exist: {records} has no record of it. Recorded environments: "
    "{known}."
)
ENV_NOT_RECORDED = "Environment {env!r} does not exist: no record of it."
NOT_THE_RECORDED_CLONE = (
    "{name} is recorded in environment {env!r} but is not its clone (its table properties say "
    "otherwise); left in place."
)
DROP_FAILURES = "{count} object(s) could not be dropped (the rest were):\n{listed}"
VIEW_SQL_UNREADABLE = "Could not read the SQL of view {name}: {text!r}"
ENV_NEEDS_ONE_SOURCE = (
    "icetime.create_environment needs exactly one of from_schema (a schema name or a list of "
    "them) or state (a dbt target directory); got from_schema={from_schema!r}, state={state!r}."
)
SCHEMA_EMPTY = "from_schema: schema {schema!r} does not exist or holds no table or view."

# -- history operations (history/, retention.py) -------------------------------------------------

NO_SUCH_TABLE = (
    "it does not exist (the catalog has no Iceberg table of that name; views and non-Iceberg "
    "tables have no snapshots)."
)
BAD_KEEP_PINS = (
    "keep_pins {value!r} is not accepted: a pins file path or a list of them (files a dbt run "
    "wrote as target/{file})."
)
ARCHIVE_UNREADABLE = "Could not read icetime's archive of expired snapshots {archive}: {reason}"
BAD_RETAIN_LAST = (
    "retain_last {value!r} is not accepted: use a whole number of at least 1 (the current "
    "snapshot is always kept)."
)
EXPIRE_NOT_ICEBERG = "Cannot expire snapshots of {table}: " + NO_SUCH_TABLE
BAD_OLDER_THAN = (
    "older_than {value!r} is not accepted: use a duration (a whole number followed by s, m, h, "
    "d or w, e.g. 30d or 90s; 0d is now) or a past ISO-8601 timestamp (2026-04-21T06:00:00Z)."
)
OLDER_THAN_IN_FUTURE = (
    "older_than {value!r} is in the future: nothing may be expired ahead of time. Use a past "
    "timestamp or a duration such as 30d."
)
BAD_DIFF_KEY = "key {value!r} is not accepted: a column name or a list of column names."
DIFF_KEY_NOT_A_COLUMN = (
    "key {keys} is not a column of {table} in both versions. Columns: {columns}."
)
ONE_TABLE_ONLY = "{what} takes one table (model or relation)."
NOTHING_TO_COMPARE = "{table} has no snapshot to compare."
UNKNOWN_TABLE_MODEL = (
    "model {name!r} is not a table, incremental, seed or snapshot of this project. Known: {known}."
)
SELECT_NO_TABLE = (
    "select {pattern!r} matched no table of this project. Accepted: a model name or glob "
    "(marts_*), a source table name or glob (raw_*), schema.table (raw.*), source:NAME or "
    "source:NAME.TABLE, tag:NAME, any dbt selection (+orders, path:models/marts), or * (every "
    "table the project builds and every source its models read)."
)
NAME_THE_TABLES = "Name the tables: model, relation or select is required."
BAD_RELATION = (
    "relation {text!r} is not accepted: use table, schema.table or catalog.schema.table "
    "(letters, digits and '_')."
)
BAD_TAG_NAME = (
    "Tag name {value!r} is not accepted: use 1-255 letters, digits, '_', '.' or '-', starting "
    "with a letter or digit (no quotes or spaces)."
)
TAG_NOT_ICEBERG = "Cannot tag {table}: " + NO_SUCH_TABLE
TAG_EXISTS = (
    "Cannot tag {table} {name!r}: it already has a {kind} of that name. Nothing was tagged."
)
TAG_EMPTY_TABLE = "Cannot tag {table}: it has no snapshot yet. Nothing was tagged."
RESTORE_NOT_ICEBERG = "Cannot restore {table}: " + NO_SUCH_TABLE
RESTORE_TO_CURRENT = (
    "Cannot restore {table} to {point}: that is snapshot {snapshot}, already its current state."
)
RESTORE_FILES_MISSING = (
    "Refusing to restore {table} to snapshot {snapshot}: {missing} of its {files} files no "
    "longer exist (expired or deleted):\n{listed}"
)

# -- dbt's patches (dbt_patches/) -----------------------------------------------------------------

BAD_DBT_PATCHES = (
    "{var}={value!r} is not accepted: use 'none', or a comma-separated list of patches from: "
    "{accepted}."
)

# -- branch runs (wap.py) ------------------------------------------------------------------------

BAD_BRANCH_NAME = (
    "{var} {value!r} is not accepted: use 1-63 lowercase letters, digits or '_', starting with "
    "a letter (and not 'main')."
)
UNBRANCHABLE_RESOURCE = (
    "{kind} {node} cannot be built in a {var} run (it would write main): exclude it, e.g. "
    "--exclude resource_type:{kind}."
)
UNBRANCHABLE_CDF = (
    "CDF model {node} cannot be built in a {var} run: its watermark is a table property, which "
    "a branch does not have. Exclude it from the branch run."
)
PINS_WITH_BRANCH = (
    "pin_snapshot and wap_branch cannot be combined: a branch run reads the branch heads of the "
    "tables it builds."
)
NO_SUCH_BRANCH = "No table of this project has a branch named {branch!r}: nothing to publish."
PUBLISH_REFUSED = (
    "Not publishing branch {branch!r}; nothing was changed:\n{listed}\nRe-run the branch build "
    "and its tests (dbt build --vars '{{{var}: {branch}}}')."
)
NO_TEST_RESULTS = (
    "Not publishing branch {branch!r}: no test results at {path} ({reason}). Run dbt build "
    "--vars '{{{var}: {branch}}}' (or dbt test with it) first."
)
RESULTS_OF_ANOTHER_RUN = (
    "Not publishing branch {branch!r}: the last dbt command ({command}, {var}={ran_on!r}) was "
    "not a dbt test or dbt build of this branch."
)
TESTS_NOT_PASSED = "Not publishing branch {branch!r}; nothing was changed: {why}."

# -- pinned runs (pins/) -------------------------------------------------------------------------

PIN_NAMES_UNKNOWN = (
    "{origin} names '{name}', which is no source, model or relation of this project (inputs of "
    "this run: {inputs})."
)
PIN_PROBLEMS = "{count} pin problem(s) for {total} input(s); nothing was built:\n  - {listed}"
PIN_ON_VIEW = (
    "{table} is a view and has no snapshots to pin ({point}). Build it in this run over pinned "
    "inputs (e.g. dbt run -s +<model>)."
)
PIN_UNREADABLE = "Cannot pin {table} for this run: {reason}"
PIN_TABLE_MISSING = "{point} for {table}: {reason}{hint}"
NOT_BUILT_HERE = (
    " It is not built in this target: build it here, or read production's with --defer "
    "--state <production's target directory>."
)
BAD_SCHEMA_MODE = "{where}: {mode!r} is not a schema mode; accepted: {accepted}."
NO_PINS_FILE = "{where}: no such file {path}."
PINS_FILE_UNREADABLE = "{where}: {path} is not a readable JSON pins file: {reason}."
NOT_A_PINS_FILE = (
    "{where}: {path} is not an icetime pins file (expected a JSON object with "
    '"icetime_pins_version": {version} and "inputs": {{table: {{"snapshot_id": …}}}}, as '
    "written to target/{file} by a dbt run)."
)
PROTECTED_VIEW = "it is a view, and a replay would freeze it at the pinned snapshots"
PROTECTED_NEWER = "it was last written at {written}, after its newest pinned input ({newest})"

# -- build records and skipping (builds/) --------------------------------------------------------

VIEW_SQL_MISSING = "Spark SQL did not report the SQL of view {view} (SHOW CREATE TABLE)."
VIEW_METADATA_UNREADABLE = "Could not read the SQL of view {view} from {file}: {reason}"
CURRENT_SCHEMA_MISSING = "{table}: its current schema {schema_id} is not in its metadata"
CLONE_REGISTER_BROKEN = (
    "The Iceberg catalog '{catalog}' did not keep what it was given when registering clone "
    "{clone}: {checks}. Its register_table is not safe for "
    "clones; icetime removed the clone and left the source as it was."
)
CLONE_SNAPSHOT_MISSING = "Cannot clone {table}: snapshot {snapshot} is not in its metadata"
PROFILE_WITHOUT_SCHEMA = "Must specify `schema` in profile"
SESSION_WITHOUT_PYSPARK = (
    "method: session needs PySpark, which is not installed. "
    "Install it with `pip install dbt-spark[session]`."
)
BUILD_RECORD_UNREADABLE = "The build record of {table} could not be read: {reason}"
BAD_SKIP_UNCHANGED = (
    "skip_unchanged {value!r} (from {where}) is not accepted: use true or false "
    "(--vars '{{skip_unchanged: true}}', or +skip_unchanged: true in dbt_project.yml or a "
    "model's config)."
)
PLAN_SELECTION_UNKNOWN = (
    "icetime.plan: select {value!r} matches no model of this project. Accepted: model names, "
    "a path such as models/marts, tag:<tag>, with + for parents or children (dbt's selection "
    "syntax); or leave select out to plan every model."
)
PLAN_SELECTION_BAD = (
    "icetime.plan: select {value!r} is not accepted: give a dbt selection as text "
    "(e.g. 'marts', 'tag:nightly', '+daily_revenue') or a list of them."
)

# -- catalogs that keep less than Iceberg's table spec (metadata/features.py) ------------------

CATALOG_REFUSES = (
    "{operation} is not available on {catalog}: it does not keep {kept}. Nothing was changed. "
    "Instead: {instead}."
)
REF_NOT_KEPT = (
    "{catalog} accepted {kind} {ref!r} on {table} and did not keep it: its metadata has no "
    "such ref. The operation stops here. Either {catalog} does not keep table-level "
    "{kind}s, or another writer replaced {table} meanwhile (run it again once it is done)."
)
SUMMARY_VALUE_SUBSTITUTED = (
    "{value!r} cannot be written into a snapshot's summary: Spark would replace its '${{...}}' "
    "with a variable. Rename the model or table so that its name holds no '${{'."
)
PROVENANCE_UNREADABLE = (
    "The record of snapshot {snapshot} of {table} cannot be read: {reason}. Its summary holds "
    "icetime keys that are not what icetime writes."
)
PROVENANCE_EXPIRED = (
    "Snapshot {snapshot} of {table} has expired: its summary, and the record in it, are gone. "
    "Keep history longer with icetime.expire_snapshots' keep_pins or a tag."
)
BUILT_PIN_MALFORMED = (
    "pin_snapshot {value!r} is not a built: pin. Write built:<schema>.<table>@<snapshot id> (or "
    "built:<catalog>.<schema>.<table>@<snapshot id>): the inputs that built that snapshot."
)
BUILT_PIN_NO_TABLE = "pin_snapshot {value!r}: {table} is not an Iceberg table of this catalog."
BUILT_PIN_NO_SNAPSHOT = (
    "pin_snapshot {value!r}: {table} has no snapshot {snapshot} (expired or never existed)."
)
BUILT_PIN_NO_RECORD = (
    "pin_snapshot {value!r}: snapshot {snapshot} of {table} carries no provenance (another "
    "writer made it, or an icetime before records rode the commits). Replay it with its pins "
    "file (@target/icetime_pins.json of that run) or a snapshot id per input."
)


# Python models (python/).
PYTHON_MODEL_RAISED = "Python model {model} raised; no table was changed.\n{traceback}"
PYTHON_MODEL_RESULT = (
    "Python model {model} returned a {kind}: model(dbt, session) must return a Spark "
    "DataFrame (or a pandas one); no table was changed"
)
PYTHON_MODEL_FRAME = (
    "Python model {model} returned a DataFrame Spark cannot run; no table was changed.\n{error}"
)
PYTHON_CHANGES_ARGUMENT = (
    "Python model {model}: {call} (line {line}) reads no ref or source: write {accepted}, "
    "with literal names, as dbt.ref() and dbt.source() take them; no table was changed"
)
PYTHON_CHANGES_FRAME = (
    "Python model {model}: dbt.changes() was given a {kind}; it takes the DataFrame of "
    "{accepted}, written in the call; no table was changed"
)
PYTHON_CHANGES_UNKNOWN = (
    "Python model {model}: dbt.changes() on line {line} reads {key}, which is none of the "
    "model's refs and sources as dbt parsed them ({known}); no table was changed"
)
PYTHON_CHANGES_NOT_CDF = (
    "Python model {model} calls dbt.changes(), which reads change rows for models with "
    "materialized='incremental' and incremental_strategy='cdf'; no table was changed"
)
PYTHON_CDF_WITHOUT_CHANGES = (
    "CDF Python model {model} reads no change rows: read its upstream with {accepted} "
    "(a Python model is not planned from a query, as a SQL one with a unique_key is)"
)
PYTHON_REMOTE_SPARK = (
    "Python model {model}: a remote Spark server (method thrift, http or odbc) runs Python "
    "models through Spark Connect; name its endpoint in the profile as connect_url "
    "(sc://host:port/;token=...), served by the same Spark application as the Thrift Server"
)
PYTHON_NO_CONNECT = (
    "Python model {model}: the warm server has no Spark Connect service (on Spark 3.5 its jar, "
    "org.apache.spark:spark-connect_2.12, could not be fetched or its secret check compiled; "
    "the log of the dbt command that started the server says why); set server: false in the "
    "profile to run Python models in process"
)

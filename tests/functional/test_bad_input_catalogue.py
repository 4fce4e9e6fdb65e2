"""The bad-input catalogue: every public operation, var and config, refusing bad values.

Each case is one real dbt invocation in a project with Iceberg tables. Every case must fail
(non-zero), with a message that names the offending value and the forms that are accepted, and
must change no table: the current snapshot id of every table in the project's schemas is the
same after the refusal as before it. Cases cover malformed, out-of-range and wrongly typed
values, injection attempts, unicode, empty and huge strings.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dbt.tests.util import run_dbt

from tests.support import PackageProject, install_package, raw_sources, run_failing, sql

# Runs on every deployment (tests/deployments.py).
pytestmark = pytest.mark.portable

TTL_FORMS = (
    "positive whole number followed by s (seconds), m (minutes), h (hours), d (days) or w (weeks)"
)
PIN_FORMS = "Accepted forms: an ISO-8601 timestamp"
ENV_FORMS = "use 1-63 lowercase letters, digits"
TAG_FORMS = "use 1-255 letters, digits, '_', '.' or '-'"
FLAG_FORMS = "use true or false"
WHOLE = "a whole number >= 1"
INJECTION = "x'; drop table raw.events; --"

# id: (macro, args, fragments the message must contain). "{s}" is the test schema.
OPERATIONS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    "restore_to_words": (
        "restore",
        {"relation": "{s}.events", "to": "yesterday"},
        ("'yesterday' is not a pin", PIN_FORMS),
    ),
    "restore_to_injection": (
        "restore",
        {"relation": "{s}.events", "to": INJECTION},
        (repr(INJECTION), PIN_FORMS),
    ),
    "restore_to_negative": (
        "restore",
        {"relation": "{s}.events", "to": -3},
        ("-3", PIN_FORMS),
    ),
    "restore_without_to": (
        "restore",
        {"relation": "{s}.events"},
        (
            "icetime.restore needs `to`",
            "a snapshot id (a positive integer), tag:NAME or branch:NAME",
        ),
    ),
    "restore_relation_four_parts": (
        "restore",
        {"relation": "a.b.c.d", "to": "1"},
        ("relation 'a.b.c.d' is not accepted", "schema.table"),
    ),
    "restore_dry_run_word": (
        "restore",
        {"relation": "{s}.events", "to": "1", "dry_run": "maybe"},
        ("dry_run='maybe' is not accepted", FLAG_FORMS),
    ),
    "tag_name_space": (
        "tag",
        {"name": "bad name", "relation": "{s}.events"},
        ("Tag name 'bad name' is not accepted", TAG_FORMS),
    ),
    "tag_name_injection": (
        "tag",
        {"name": INJECTION, "relation": "{s}.events"},
        (f"Tag name {INJECTION!r} is not accepted", TAG_FORMS),
    ),
    "tag_name_unicode": (
        "tag",
        {"name": "étiquette", "relation": "{s}.events"},
        ("Tag name 'étiquette' is not accepted", TAG_FORMS),
    ),
    "tag_name_empty": (
        "tag",
        {"name": "", "relation": "{s}.events"},
        ("Tag name '' is not accepted", TAG_FORMS),
    ),
    "tag_name_huge": (
        "tag",
        {"name": "t" * 300, "relation": "{s}.events"},
        ("Tag name 'tttttttttt", TAG_FORMS),
    ),
    "tag_retain_words": (
        "tag",
        {"name": "ok", "relation": "{s}.events", "retain": "forever"},
        ("'forever' is not accepted", TTL_FORMS),
    ),
    "expire_older_than_years": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "1y"},
        ("older_than '1y' is not accepted", "followed by s, m, h, d or w"),
    ),
    "expire_older_than_future": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "2999-01-01"},
        ("older_than '2999-01-01' is in the future", "a past timestamp or a duration"),
    ),
    "expire_retain_last_zero": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "1d", "retain_last": 0},
        ("retain_last 0 is not accepted", "a whole number of at least 1"),
    ),
    "expire_retain_last_text": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "1d", "retain_last": "three"},
        ("retain_last 'three' is not accepted", "a whole number of at least 1"),
    ),
    "expire_keep_history_words": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "1d", "keep_history": "forever"},
        ("keep_history 'forever' is not accepted", TTL_FORMS),
    ),
    "expire_keep_pins_mapping": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "1d", "keep_pins": {"a": 1}},
        ("keep_pins {'a': 1} is not accepted", "a pins file path or a list of them"),
    ),
    "expire_keep_pins_not_a_pins_file": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_than": "1d", "keep_pins": "dbt_project.yml"},
        ("keep_pins 'dbt_project.yml'", "is not a readable JSON pins file"),
    ),
    "history_limit_negative": (
        "history",
        {"relation": "{s}.events", "limit": -1},
        ("limit=-1 is not accepted", WHOLE),
    ),
    "history_limit_text": (
        "history",
        {"relation": "{s}.events", "limit": "ten"},
        ("limit='ten' is not accepted", WHOLE),
    ),
    "diff_from_words": (
        "diff",
        {"relation": "{s}.events", "from": "last week"},
        ("'last week' is not a pin", PIN_FORMS),
    ),
    "diff_without_from": (
        "diff",
        {"relation": "{s}.events"},
        ("icetime.diff needs `from`", "an ISO-8601 timestamp"),
    ),
    "diff_rows_negative": (
        "diff",
        {"relation": "{s}.events", "from": "tag:first", "rows": -5},
        ("rows=-5 is not accepted", WHOLE),
    ),
    "diff_key_mapping": (
        "diff",
        {"relation": "{s}.events", "from": "tag:first", "key": {"a": 1}},
        ("key {'a': 1} is not accepted", "a column name or a list of column names"),
    ),
    "env_unicode": (
        "create_environment",
        {"env": "prü", "ttl": "1h", "from_schema": "{s}"},
        ("Environment name 'prü' is not accepted", ENV_FORMS),
    ),
    "env_empty": (
        "create_environment",
        {"env": "", "ttl": "1h", "from_schema": "{s}"},
        ("Environment name '' is not accepted", ENV_FORMS),
    ),
    "env_huge": (
        "create_environment",
        {"env": "e" * 100, "ttl": "1h", "from_schema": "{s}"},
        ("Environment name 'eeeeeeeeee", ENV_FORMS),
    ),
    "env_injection": (
        "create_environment",
        {"env": INJECTION, "ttl": "1h", "from_schema": "{s}"},
        (f"Environment name {INJECTION!r} is not accepted", ENV_FORMS),
    ),
    "env_without_ttl": (
        "create_environment",
        {"env": "pr1", "from_schema": "{s}"},
        ("icetime.create_environment needs `ttl`", "a lifetime such as 7d or 36h"),
    ),
    "env_ttl_words": (
        "create_environment",
        {"env": "pr1", "ttl": "7 days", "from_schema": "{s}"},
        ("TTL '7 days' is not accepted", TTL_FORMS),
    ),
    "env_ttl_zero": (
        "create_environment",
        {"env": "pr1", "ttl": "0h", "from_schema": "{s}"},
        ("TTL '0h' is not accepted", "more than 0 seconds"),
    ),
    "env_ttl_wrong_type": (
        "create_environment",
        {"env": "pr1", "ttl": [1, "d"], "from_schema": "{s}"},
        ("TTL [1, 'd'] is not accepted", TTL_FORMS),
    ),
    "env_replace_word": (
        "create_environment",
        {"env": "pr1", "ttl": "1h", "from_schema": "{s}", "replace": "maybe"},
        ("replace='maybe' is not accepted", FLAG_FORMS),
    ),
    "env_at_words": (
        "create_environment",
        {"env": "pr1", "ttl": "1h", "from_schema": "{s}", "at": "soon"},
        ("'soon' is not a pin", PIN_FORMS),
    ),
    "janitor_env_upper": (
        "drop_expired_environments",
        {"env": "PR1"},
        ("Environment name 'PR1' is not accepted", ENV_FORMS),
    ),
    "janitor_dry_run_word": (
        "drop_expired_environments",
        {"dry_run": "nah"},
        ("dry_run='nah' is not accepted", FLAG_FORMS),
    ),
    "report_env_space": (
        "environment_report",
        {"env": "x y"},
        ("Environment name 'x y' is not accepted", ENV_FORMS),
    ),
    "publish_branch_space": (
        "publish",
        {"branch": "a b"},
        ("wap_branch 'a b' is not accepted", "lowercase letters, digits or '_'"),
    ),
    "publish_branch_main": (
        "publish",
        {"branch": "main"},
        ("wap_branch 'main' is not accepted", "and not 'main'"),
    ),
    "tag_misspelt_key": (
        "tag",
        {"name": "x", "modle": "events_copy"},
        (
            "running operation: Compilation Error",
            "icetime.tag: unknown argument(s) modle",
            "Accepted: name, model, relation, select",
        ),
    ),
    "expire_misspelt_key": (
        "expire_snapshots",
        {"relation": "{s}.events", "older_then": "1d"},
        ("unknown argument(s) older_then", "older_than"),
    ),
    "tag_without_name": ("tag", {"relation": "{s}.events"}, ("icetime.tag needs `name`",)),
    "tag_missing_table": (
        "tag",
        {"name": "x", "relation": "{s}.nope"},
        ("Cannot tag icetime.", "nope: it does not exist"),
    ),
    "restore_to_mapping": (
        "restore",
        {"relation": "{s}.events", "to": {"a": 1}},
        ("is not a pin", "tag:NAME or branch:NAME."),
    ),
    "history_width_zero": (
        "history",
        {"relation": "{s}.events", "width": 0},
        ("width=0 is not accepted", WHOLE),
    ),
    "publish_without_branch": ("publish", {}, ("icetime.publish needs `branch`",)),
    "env_without_env": (
        "create_environment",
        {"ttl": "1h", "from_schema": "{s}"},
        ("icetime.create_environment needs `env`",),
    ),
}

# id: (dbt run --vars, fragments the message must contain)
VARS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "pin_words": ({"pin_snapshot": "yesterday"}, ("'yesterday' is not a pin", PIN_FORMS)),
    "pin_negative": ({"pin_snapshot": -5}, ("-5", PIN_FORMS)),
    "pin_empty_tag": ({"pin_snapshot": "tag:"}, ("'tag:'", PIN_FORMS)),
    "pin_injection": ({"pin_snapshot": INJECTION}, (repr(INJECTION), PIN_FORMS)),
    "pin_unicode": ({"pin_snapshot": "2026-04-21T06:00:00Z\u200b"}, ("is not a pin", PIN_FORMS)),
    "pin_huge": ({"pin_snapshot": "9" * 400}, ("999999999", PIN_FORMS)),
    "pin_missing_file": ({"pin_snapshot": "@no/such/pins.json"}, ("no/such/pins.json",)),
    "pin_list": ({"pin_snapshot": [1, 2]}, ("[1, 2]", PIN_FORMS)),
    "wap_branch_space": ({"wap_branch": "a b"}, ("wap_branch 'a b' is not accepted",)),
    "wap_branch_upper": ({"wap_branch": "Main"}, ("wap_branch 'Main' is not accepted",)),
    "wap_branch_empty": ({"wap_branch": ""}, ("wap_branch '' is not accepted",)),
}

CDF = (
    "{{{{ config(materialized='incremental', incremental_strategy='cdf', unique_key='id'"
    "{extra}) }}}}\nselect id, v, _change_type "
    "from {{{{ icetime.changes(source('raw', 'events')) }}}}"
)
# id: (model name, fragments); the models are in the project and built only by their case.
CONFIGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cdf_mode": ("bad_mode", ("config 'cdf_mode' has the value 'upsert'", "merge, append")),
    "on_history_gap": (
        "bad_gap",
        ("config 'on_history_gap' has the value 'skip'", "fail, full_refresh"),
    ),
    "cdf_refresh": (
        "bad_refresh",
        ("config 'cdf_refresh' has the value 'sometimes'", "auto, incremental, full"),
    ),
    "file_format": ("bad_format", ("file_format='delta'", "Accepted: 'iceberg'")),
}
MODELS = {
    "bad_mode.sql": CDF.format(extra=", cdf_mode='upsert'"),
    "bad_gap.sql": CDF.format(extra=", on_history_gap='skip'"),
    "bad_refresh.sql": CDF.format(extra=", cdf_refresh='sometimes'"),
    "bad_format.sql": "{{ config(materialized='table', file_format='delta') }}\nselect 1 as id",
}


class TestBadInputCatalogue(PackageProject):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "sources.yml": raw_sources("events"),
            "events_copy.sql": "{{ config(materialized='table') }}\n"
            "select * from {{ source('raw', 'events') }}",
            **MODELS,
        }

    @pytest.fixture(scope="class", autouse=True)
    def tables(self, project: Any) -> None:
        install_package(project)
        sql(project, "create table {s}.events (id bigint, v string) using iceberg")
        sql(project, "insert into {s}.events values (1, 'a'), (2, 'b')")
        sql(project, "alter table {s}.events create tag `first`")
        sql(project, "insert into {s}.events values (3, 'c')")
        run_dbt(["run", "--select", "events_copy"])

    def current_snapshots(self, project: Any) -> dict[str, Any]:
        """Every table of the test's schemas (and icetime's own) -> its current snapshot id."""
        found: dict[str, Any] = {}
        namespaces = {r[0] for r in sql(project, "show namespaces in icetime", fetch="all")}
        ours = [n for n in namespaces if n.startswith(project.test_schema)]
        for namespace in [*ours, *({"icetime_system"} & namespaces)]:
            for row in sql(project, f"show tables in icetime.`{namespace}`", fetch="all"):
                table = f"icetime.`{namespace}`.`{row[1]}`"
                refs = sql(
                    project,
                    f"select snapshot_id from {table}.refs where name = 'main'",
                    fetch="all",
                )
                found[table] = refs[0][0] if refs else None
        return found

    def refused(self, project: Any, args: list[str], fragments: tuple[str, ...]) -> None:
        before = self.current_snapshots(project)
        output = run_failing(args)
        for fragment in fragments:
            assert fragment in output, f"{fragment!r} not in:\n{output[-3000:]}"
        # Bad input is the user's error, never labelled as the database's.
        assert "Database Error" not in output, output[-3000:]
        assert self.current_snapshots(project) == before

    @pytest.mark.parametrize("case", sorted(OPERATIONS))
    def test_operation_refuses(self, project: Any, case: str) -> None:
        macro, args, fragments = OPERATIONS[case]
        rendered = json.loads(json.dumps(args).replace("{s}", project.test_schema))
        self.refused(
            project,
            ["run-operation", f"icetime.{macro}", "--args", json.dumps(rendered)],
            fragments,
        )

    @pytest.mark.parametrize("case", sorted(VARS))
    def test_var_refuses(self, project: Any, case: str) -> None:
        variables, fragments = VARS[case]
        args = ["run", "--select", "events_copy", "--vars", json.dumps(variables)]
        self.refused(project, args, fragments)

    @pytest.mark.parametrize("case", sorted(CONFIGS))
    def test_config_refuses(self, project: Any, case: str) -> None:
        model, fragments = CONFIGS[case]
        self.refused(project, ["run", "--select", model], fragments)

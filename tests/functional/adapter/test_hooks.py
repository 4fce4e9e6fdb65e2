"""Run and model hooks (`dbt.tests.adapter.hooks`) on Spark + Iceberg.

dbt's checks expect a Postgres target (its host, user, database, 4 threads): here they check the
icetime session profile's values. dbt's record tables and queries run through the fixture
translator (conftest.py); every hook, ordering and count check of dbt's suite is unchanged.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.adapter.hooks import test_model_hooks as model_hooks
from dbt.tests.adapter.hooks import test_run_hooks as run_hooks

from tests.support import inherited_fixture


def check_record(ctx: dict[str, Any], state: str, project: Any, profile: dict[str, Any]) -> None:
    """dbt's checks of one hook record, with the icetime session profile's values."""
    assert ctx["test_state"] == state
    assert ctx["target_name"] == "default"
    assert ctx["target_schema"] == project.test_schema
    assert ctx["target_threads"] == profile["threads"]
    assert ctx["target_type"] == "icetime"
    # (No user or password: the session method connects to no server.)
    assert ctx["run_started_at"], "run_started_at was not set"
    assert ctx["invocation_id"], "invocation_id was not set"
    assert ctx["thread_id"].startswith("Thread-") or ctx["thread_id"] == "MainThread"


# dbt's hooks in Postgres SQL, and their Spark SQL: `vacuum` (Spark has none) becomes `refresh
# table`, still run outside a transaction; `x::t` is `cast(x as t)`; `text` is `string`.
HOOK_SQL = (
    ("vacuum ", "refresh table "),
    ("null::{{ dbt.type_int() }}", "cast(null as {{ dbt.type_int() }})"),
    (" text", " string"),
)


class SparkHookStatements:
    """dbt's project config with its hooks in Spark SQL (hooks run through dbt, not the
    fixture translator)."""

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        config = json.dumps(inherited_fixture(self, SparkHookStatements, "project_config_update"))
        for postgres, spark in HOOK_SQL:
            config = config.replace(postgres, spark)
        return dict(json.loads(config))


class IcetimeTarget:
    @pytest.fixture(scope="class")
    def test_data_dir(self) -> Path:
        """dbt's record-table DDL beside its hooks suite (the fixture looks beside this file)."""
        return Path(run_hooks.__file__).parent / "data"

    @pytest.fixture(scope="class", autouse=True)
    def profile_for_checks(self, dbt_profile_target: dict[str, Any]) -> None:
        type(self).profile = dbt_profile_target


class SparkModelHookRecords(IcetimeTarget):
    def check_hooks(self, state: str, project: Any, host: Any, count: int = 1) -> None:
        for ctx in self.get_ctx_vars(state, count=count, project=project):  # type: ignore[attr-defined]
            check_record(ctx, state, project, self.profile)
            assert ctx["thread_id"].startswith("Thread-")


class TestPrePostRunHooks(SparkHookStatements, IcetimeTarget, run_hooks.BasePrePostRunHooks):
    def check_hooks(self, state: str, project: Any, host: Any) -> None:
        check_record(self.get_ctx_vars(state, project), state, project, self.profile)


class TestAfterRunHooks(run_hooks.BaseAfterRunHooks):
    pass


class TestHookRefs(SparkModelHookRecords, model_hooks.BaseHookRefs):
    pass


class TestHooksRefsOnSeeds(model_hooks.BaseHooksRefsOnSeeds):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixed(
    model_hooks.BasePrePostModelHooksOnSeedsPlusPrefixed
):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixedWhitespace(
    model_hooks.BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace
):
    pass


class TestPrePostModelHooksOnSnapshots(model_hooks.BasePrePostModelHooksOnSnapshots):
    pass


class TestPrePostModelHooksInConfig(
    SparkModelHookRecords, model_hooks.BasePrePostModelHooksInConfig
):
    pass


class TestPrePostModelHooksInConfigKwargs(
    SparkModelHookRecords, model_hooks.BasePrePostModelHooksInConfigKwargs
):
    pass


class TestPrePostSnapshotHooksInConfigKwargs(model_hooks.BasePrePostSnapshotHooksInConfigKwargs):
    pass


class TestDuplicateHooksInConfigs(model_hooks.BaseDuplicateHooksInConfigs):
    pass


class TestPrePostModelHooks(
    SparkHookStatements, SparkModelHookRecords, model_hooks.BasePrePostModelHooks
):
    pass


class TestPrePostModelHooksUnderscores(
    SparkHookStatements, SparkModelHookRecords, model_hooks.TestPrePostModelHooksUnderscores
):
    pass


class TestPrePostModelHooksOnSeeds(SparkHookStatements, model_hooks.BasePrePostModelHooksOnSeeds):
    pass


class TestPrePostModelHooksInConfigWithCount(
    SparkHookStatements, SparkModelHookRecords, model_hooks.BasePrePostModelHooksInConfigWithCount
):
    pass

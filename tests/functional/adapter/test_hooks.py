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


class TestPrePostRunHooks(IcetimeTarget, run_hooks.BasePrePostRunHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        config = run_hooks.BasePrePostRunHooks.project_config_update.__wrapped__(self)  # type: ignore[attr-defined]
        # The on-run-end hooks' DDL goes through dbt, not the fixture translator.
        config["on-run-end"] = [hook.replace(" text", " string") for hook in config["on-run-end"]]
        return config

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


def spark_hooks(config: dict[str, Any]) -> dict[str, Any]:
    """dbt's hook config with Spark statements for Postgres ones: `vacuum` (Spark has none) is
    `refresh table`, still run outside a transaction; `x::t` is `cast(x as t)`."""
    text = json.dumps(config).replace("vacuum ", "refresh table ")
    return dict(
        json.loads(text.replace("null::{{ dbt.type_int() }}", "cast(null as {{ dbt.type_int() }})"))
    )


class TestPrePostModelHooks(SparkModelHookRecords, model_hooks.BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return spark_hooks(
            model_hooks.BasePrePostModelHooks.project_config_update.__wrapped__(self)
        )  # type: ignore[attr-defined]


class TestPrePostModelHooksUnderscores(
    SparkModelHookRecords, model_hooks.TestPrePostModelHooksUnderscores
):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        base = model_hooks.TestPrePostModelHooksUnderscores.project_config_update
        return spark_hooks(base.__wrapped__(self))  # type: ignore[attr-defined]


class TestPrePostModelHooksOnSeeds(model_hooks.BasePrePostModelHooksOnSeeds):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        base = model_hooks.BasePrePostModelHooksOnSeeds.project_config_update
        return spark_hooks(base.__wrapped__(self))  # type: ignore[attr-defined]


class TestPrePostModelHooksInConfigWithCount(
    SparkModelHookRecords, model_hooks.BasePrePostModelHooksInConfigWithCount
):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        base = model_hooks.BasePrePostModelHooksInConfigWithCount.project_config_update
        return spark_hooks(base.__wrapped__(self))  # type: ignore[attr-defined]

"""Seeds (`dbt.tests.adapter.simple_seed`) on Spark + Iceberg."""

from pathlib import Path
from typing import Any

import pytest
from dbt.tests.adapter.simple_seed import fixtures, seeds
from dbt.tests.adapter.simple_seed import test_seed as seed_suite
from dbt.tests.adapter.simple_seed.test_seed import (
    BaseBasicSeedTests,
    BaseSeedConfigFullRefreshOff,
    BaseSeedConfigFullRefreshOn,
    BaseSeedCustomSchema,
    BaseSeedParsing,
    BaseSeedSpecificFormats,
    BaseSeedWithEmptyDelimiter,
    BaseSeedWithUniqueDelimiter,
    BaseSeedWithWrongDelimiter,
    BaseSimpleSeedEnabledViaConfig,
    BaseSimpleSeedWithBOM,
    BaseTestEmptySeed,
)
from dbt.tests.adapter.simple_seed.test_seed_type_override import BaseSimpleSeedColumnOverride
from dbt.tests.util import copy_file

# dbt's full-refresh checks expect `DROP TABLE ... CASCADE` to take the downstream view with the
# seed's table (Postgres). Spark has no cascading drop, and icetime replaces a seed's rows in one
# commit on the same table (docs/iceberg-behaviour.md): the view stays, reading the new rows.
NO_CASCADE = "Spark has no DROP ... CASCADE: a seed's downstream view is never dropped with it"


class TestBasicSeedTests(BaseBasicSeedTests):
    @pytest.mark.skip(reason=NO_CASCADE)
    def test_simple_seed_full_refresh_flag(self, project: Any) -> None:
        pass


@pytest.mark.skip(reason=NO_CASCADE)
class TestSeedConfigFullRefreshOn(BaseSeedConfigFullRefreshOn):
    pass


class TestSeedConfigFullRefreshOff(BaseSeedConfigFullRefreshOff):
    pass


class TestSeedCustomSchema(BaseSeedCustomSchema):
    pass


class TestSeedWithUniqueDelimiter(BaseSeedWithUniqueDelimiter):
    pass


class TestSeedWithWrongDelimiter(BaseSeedWithWrongDelimiter):
    pass


class TestSeedWithEmptyDelimiter(BaseSeedWithEmptyDelimiter):
    pass


class TestSimpleSeedEnabledViaConfig(BaseSimpleSeedEnabledViaConfig):
    pass


class TestSeedParsing(BaseSeedParsing):
    pass


class TestSimpleSeedWithBOM(BaseSimpleSeedWithBOM):
    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project: Any) -> None:
        # dbt's fixture copies seed_bom.csv from beside the test module: here, beside dbt's.
        project.run_sql(seeds.seeds__expected_sql)
        copy_file(
            Path(seed_suite.__file__).parent,
            "seed_bom.csv",
            project.project_root / Path("seeds") / "seed_bom.csv",
            "",
        )


class TestSeedSpecificFormats(BaseSeedSpecificFormats):
    pass


class TestEmptySeed(BaseTestEmptySeed):
    pass


# Postgres type names in dbt's fixture, as Spark names them (a CSV integer is a bigint).
SPARK_TYPES = {"timestamp without time zone": "timestamp", "text": "string", "integer": "bigint"}


class TestSimpleSeedColumnOverride(BaseSimpleSeedColumnOverride):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        schema = fixtures.properties__schema_yml
        for postgres, spark in SPARK_TYPES.items():
            schema = schema.replace(f"type: {postgres}", f"type: {spark}")
        return {"schema.yml": schema}

    @staticmethod
    def seed_enabled_types() -> dict[str, str]:
        return {"seed_id": "string", "birthday": "date"}

    @staticmethod
    def seed_tricky_types() -> dict[str, str]:
        return {
            "seed_id_str": "string",
            "looks_like_a_bool": "string",
            "looks_like_a_date": "string",
        }

"""A Python model's pure parts: its view's name, its file's line numbers, its refused results."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.python import models


def test_the_view_is_named_for_the_model_and_the_invocation() -> None:
    one = models.view_name("model.p.m", "inv-1")
    assert one == models.view_name("model.p.m", "inv-1")
    assert one != models.view_name("model.p.m", "inv-2")
    assert one != models.view_name("model.p.n", "inv-1")
    assert models.view_sql("model.p.m", "inv-1") == f"global_temp.`{one}`"


@pytest.mark.parametrize(
    ("raw", "compiled", "lines"),
    [
        ("def model(dbt, s):\n    pass\n", "def model(dbt, s):\n    pass\n# dbt's", 0),
        ("\n\ndef model(dbt, s):\n    pass\n", "def model(dbt, s):\n    pass\n# dbt's", 2),
        ("# a comment\n\nimport x\n", "# a comment\n\nimport x\n# dbt's", 0),
        ("", "def model(dbt, s): ...", 0),  # the file could not be read
    ],
)
def test_the_file_s_leading_lines_are_put_back(raw: str, compiled: str, lines: int) -> None:
    assert models._leading_lines(raw, compiled) == lines


def test_a_result_that_is_no_dataframe_is_refused_by_its_type() -> None:
    with pytest.raises(errors.PythonModelError) as refused:
        models.as_spark(None, {"rows": 1}, "model.p.m")
    assert "Python model model.p.m returned a builtins.dict" in str(refused.value)
    assert "no table was changed" in str(refused.value)

"""A Python model's pure parts: its view's name, its file's line numbers, its refused results."""

from __future__ import annotations

import pytest

from dbt.adapters.icetime import errors
from dbt.adapters.icetime.python import changes, models


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


@pytest.mark.parametrize(
    ("call", "key"),
    [
        ('dbt.changes(dbt.ref("orders"))', "ref:orders"),
        ("dbt.changes(dbt.ref('pkg', 'orders'))", "ref:pkg.orders"),
        ('dbt.changes(dbt.ref("orders", v=2))', "ref:orders.v2"),
        ('dbt.changes(dbt.ref("orders", version="3"))', "ref:orders.v3"),
        ('dbt.changes(dbt.source("raw", "objects"))', "source:raw.objects"),
    ],
)
def test_a_changes_call_names_the_input_it_reads(call: str, key: str) -> None:
    code = f"def model(dbt, session):\n    return {call}\n"
    assert [(c.key, c.line) for c in changes.change_calls(code, "model.p.m")] == [(key, 2)]


@pytest.mark.parametrize(
    "call",
    [
        "dbt.changes(frame)",
        "dbt.changes(dbt.ref(name))",
        'dbt.changes(dbt.ref("orders").where("x > 1"))',
        'dbt.changes(dbt.source("raw"))',
        'dbt.changes(dbt.ref("a", "b", "c"))',
        'dbt.changes(dbt.ref("orders", v=n))',
        'dbt.changes(dbt.this("orders"))',
        'dbt.changes(dbt.ref("a"), dbt.ref("b"))',
    ],
)
def test_a_changes_call_of_anything_else_is_refused_naming_it(call: str) -> None:
    code = f"def model(dbt, session):\n    frame = None\n    return {call}\n"
    with pytest.raises(errors.ConfigurationError) as refused:
        changes.change_calls(code, "model.p.m")
    message = str(refused.value)
    assert f"Python model model.p.m: {call} (line 3)" in message
    assert changes.ACCEPTED in message


def test_code_without_changes_calls_plans_none() -> None:
    code = "def model(dbt, session):\n    return dbt.ref('orders')\n"
    assert changes.change_calls(code, "model.p.m") == []
    assert changes.change_calls("def broken(:\n", "model.p.m") == []  # its run says why


def test_dbt_changes_refuses_a_frame_no_changes_call_read() -> None:
    class Session:
        def sql(self, text: str) -> tuple[str]:
            return (text,)

    session = Session()
    reads = changes.ChangeReads("model.p.m", cdf=True, by_relation={"`c`.`s`.`t`": "`v0`"})
    load, read = reads.loader(session), reads.changes(session)
    frame = load("`c`.`s`.`t`")
    assert read(frame) == ("select * from `v0`",)
    with pytest.raises(errors.PythonModelError) as refused:
        read(load("`c`.`s`.`other`"))
    assert "dbt.changes() was given a builtins.tuple" in str(refused.value)
    not_cdf = changes.ChangeReads("model.p.m")
    with pytest.raises(errors.PythonModelError) as refused:
        not_cdf.changes(session)(not_cdf.loader(session)("`c`.`s`.`t`"))
    assert "incremental_strategy='cdf'" in str(refused.value)


def test_a_changes_call_of_an_input_dbt_did_not_parse_is_refused() -> None:
    model = {
        "unique_id": "model.p.m",
        "compiled_code": "def model(dbt, s):\n    return dbt.changes(dbt.ref('orders', v=2))\n",
    }

    def never(*args: object) -> dict[str, str]:
        raise AssertionError("planned")

    with pytest.raises(errors.ConfigurationError) as refused:
        relations = {"ref:orders": object()}
        jobs = models.PythonJobs(None, "i", {}, "/")  # type: ignore[arg-type]
        jobs.plan_changes(None, model, relations, never)  # type: ignore[arg-type]
    assert "on line 2 reads ref:orders.v2, which is none of the model's refs" in str(refused.value)
    assert "(ref:orders)" in str(refused.value)

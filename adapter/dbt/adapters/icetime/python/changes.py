"""A CDF Python model's change reads: ``dbt.changes(dbt.ref("orders"))``, as a SQL model's
``icetime.changes(ref('orders'))``.

dbt finds a Python model's dependencies in its code's syntax tree (``dbt.ref`` and
``dbt.source`` calls with literal names), and so does this: before the code runs, the calls
``dbt.changes(dbt.ref(...))`` and ``dbt.changes(dbt.source(...))`` name the upstreams whose
changes it reads. The change engine plans them all then (each range, a rebuild, a recovery) and
makes their change views in the session the code runs on, so no view changes under the code
after it has read one. At run time ``dbt.changes(frame)`` returns the change rows of the
upstream ``frame`` was read from by ``dbt.ref`` or ``dbt.source``; anything else is refused,
naming what is accepted.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.icetime import errors

ACCEPTED = "dbt.changes(dbt.ref('model')) or dbt.changes(dbt.source('source', 'table'))"


@dataclass(frozen=True)
class ChangeCall:
    """One ``dbt.changes(...)`` call of the code: the ref or source it reads, as the key its
    model's inputs have (``ref:orders``, ``ref:package.orders.v2``, ``source:raw.objects``)."""

    key: str
    line: int


def change_calls(code: str, model: str) -> list[ChangeCall]:
    """The ``dbt.changes()`` calls of a model's code, each of a literal ref or source; any
    other argument is refused, naming its line and what is accepted."""
    try:
        tree = ast.parse(code)
    except SyntaxError:  # the model's own run reports it, with its line
        return []
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_dbt(node.func, "changes"):
            calls.append(ChangeCall(_read_key(node, code, model), node.lineno))
    return calls


def _read_key(call: ast.Call, code: str, model: str) -> str:
    argument = call.args[0] if len(call.args) == 1 and not call.keywords else None
    key = _input_key(argument) if isinstance(argument, ast.Call) else None
    if key is not None:
        return key
    text = ast.get_source_segment(code, call) or "dbt.changes(...)"
    raise errors.ConfigurationError(
        errors.PYTHON_CHANGES_ARGUMENT.format(
            model=model, call=text, line=call.lineno, accepted=ACCEPTED
        )
    )


def _input_key(read: ast.Call) -> str | None:
    """The key of ``dbt.ref('name'[, v=N])`` (or with a package) or ``dbt.source('s', 't')``
    with literal names; None for any other call."""
    names = [a.value for a in read.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(names) != len(read.args):
        return None
    keywords = {k.arg: k.value for k in read.keywords}
    if _is_dbt(read.func, "source"):
        return "source:" + ".".join(names) if len(names) == 2 and not keywords else None
    if not _is_dbt(read.func, "ref") or len(names) not in (1, 2):
        return None
    if not set(keywords) <= {"v", "version"} or len(keywords) > 1:
        return None
    version = next(iter(keywords.values()), None)
    if version is None:
        return "ref:" + ".".join(names)
    if isinstance(version, ast.Constant) and isinstance(version.value, (str, int)):
        return "ref:" + ".".join(names) + f".v{version.value}"
    return None


def _is_dbt(func: ast.expr, name: str) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and func.attr == name
        and isinstance(func.value, ast.Name)
        and func.value.id == "dbt"
    )


def rendered(relation: Any) -> str:
    """How the model's compiled code names ``relation`` (dbt's ``build_ref_function``: its
    ``render()``, double quotes escaped), which ``dbt.ref`` hands the frame loader."""
    text = relation.render() if callable(getattr(relation, "render", None)) else str(relation)
    return str(text).replace('"', '\\"')


@dataclass
class ChangeReads:
    """The change reads of one Python model's run: what each relation its code names reads
    its changes from (a view's name, or ``--empty``'s empty read), and the frames ``dbt.ref``
    and ``dbt.source`` returned, by the relation each was read from."""

    model: str
    cdf: bool = False  # the model's strategy is cdf: its reads were planned
    by_relation: Mapping[str, str] = field(default_factory=dict)
    _loaded: list[tuple[Any, str]] = field(default_factory=list)

    def loader(self, session: Any) -> Callable[[str], Any]:
        """dbt's frame loader for ``ref`` and ``source``: a plain read, remembered."""

        def load(relation: str) -> Any:
            frame = session.sql(f"select * from {relation}")
            self._loaded.append((frame, relation))
            return frame

        return load

    def changes(self, session: Any) -> Callable[[Any], Any]:
        """``dbt.changes``: the change rows of the upstream a frame was read from."""

        def changes(frame: Any) -> Any:
            if not self.cdf:
                message = errors.PYTHON_CHANGES_NOT_CDF.format(model=self.model)
                raise errors.PythonModelError(message)
            relation = next((r for f, r in self._loaded if f is frame), None)
            source = self.by_relation.get(relation) if relation is not None else None
            if source is None:
                raise errors.PythonModelError(
                    errors.PYTHON_CHANGES_FRAME.format(
                        model=self.model, kind=_kind(frame), accepted=ACCEPTED
                    )
                )
            return session.sql(f"select * from {source}")

        return changes


def _kind(value: Any) -> str:
    if hasattr(value, "sparkSession") or hasattr(value, "_session"):
        return "DataFrame not read by dbt.ref() or dbt.source() of a dbt.changes() call"
    return f"{type(value).__module__}.{type(value).__qualname__}"

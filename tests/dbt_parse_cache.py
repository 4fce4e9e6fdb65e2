"""dbt's parse caches, turned on and filled in the server that forks the tests' `dbt` processes.

A full parse of a project spends most of its time parsing the Jinja of the packages' macros:
dbt's global project, dbt-spark's and icetime's, 590 macros, the same text every time (a forked
`dbt parse --no-partial-parse` of a two-model project: 2.9-3.6 CPU-s without the caches, 2.4
with them; docs/testing.md, "Quick test processes").
dbt keeps a cache of those parses for test suites (``dbt_common.tests.enable_test_caching``;
dbt's ``project`` fixture turns it on in the test processes). The fork server
(``tests/dbt_fork.py``) imports this module once: it turns the cache on and parses the packages'
macros as dbt's parser does, so every forked `dbt` process starts with them parsed. The cache is
keyed by the text parsed, so a project's own macros, and a macro a test edits, are parsed as
before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

# The macro packages every icetime project loads (not the adapter's Python package: see
# tests/dbt_fork.py on why the server does not import it).
PACKAGES = ("global_project", "spark", "icetime")

# What dbt's macro parser extracts from a macro file (dbt/parser/macros.py).
MACRO_BLOCKS = {"macro", "materialization", "test", "data_test"}


def _macro_files() -> Iterator[Path]:
    import dbt.include

    for include in dbt.include.__path__:
        for package in PACKAGES:
            yield from sorted(Path(include, package).glob("**/*.sql"))


def warm() -> None:
    """Parse the packages' macros into dbt's caches: each macro's Jinja as dbt's macro parser
    parses it, then as its dependency scan does (cached before the scan resolves any call)."""
    from dbt.clients.jinja_static import statically_extract_macro_calls
    from dbt_common.clients import jinja

    for path in _macro_files():
        blocks = jinja.extract_toplevel_blocks(
            path.read_text(), allowed_blocks=MACRO_BLOCKS, collect_raw_data=False
        )
        for block in blocks:
            if isinstance(block, jinja.BlockTag):
                jinja.parse(block.full_block)
                statically_extract_macro_calls(block.full_block, {}, None)


def _install() -> None:
    from dbt_common.tests import enable_test_caching

    enable_test_caching()
    warm()


_install()

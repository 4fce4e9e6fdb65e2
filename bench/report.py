"""Writing a benchmark's results as a markdown table under bench/results/."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

Row = tuple[str, str, str, str]  # measure, median, range, target


def measured(name: str, values: Sequence[float], digits: int = 1, target: str = "") -> Row:
    """A row for repeated measurements: their median and min-max."""
    fmt = f"{{:.{digits}f}}"
    spread = f"{fmt.format(min(values))}-{fmt.format(max(values))}"
    return (name, fmt.format(statistics.median(values)), spread, target)


def write_results(stem: str, title: str, preamble: str, rows: Sequence[Row]) -> None:
    """Write bench/results/<stem>.md and print it."""
    lines = [f"# {title}", "", preamble, "", "| measure | median | range | target |"]
    lines.append("| --- | ---: | --- | --- |")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{stem}.md").write_text(text)
    print(text, end="")

"""Every reference to a section of the README or of docs/, in the project's own files, names a
section that exists (the package's dbt_project.yml once pointed at one that did not)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# `README, "Section"` or `docs/x.md, "Section"` (a title in quotes after the document's name).
REFERENCE = re.compile(r'(README|docs/[\w-]+\.md),\s+"([^"]+)"')
SEARCHED = ("adapter", "macros", "scripts", "tests", "bench", "integration_tests")


def headings(document: Path) -> set[str]:
    return {
        line.lstrip("#").strip()
        for line in document.read_text().splitlines()
        if line.startswith("#")
    }


def project_files() -> list[Path]:
    found = [ROOT / "dbt_project.yml"]
    for folder in SEARCHED:
        found += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and p.suffix in (".py", ".sql", ".yml", ".sh", ".md")
        ]
    return found


def test_every_section_a_file_refers_to_exists() -> None:
    missing = []
    for path in project_files():
        if path == Path(__file__).resolve():
            continue  # its own examples
        text = " ".join(path.read_text(errors="replace").split())
        for document, section in REFERENCE.findall(text):
            target = ROOT / ("README.md" if document == "README" else document)
            # A heading, or a paragraph that starts with the section's name in bold.
            found = target.is_file() and (
                section in headings(target) or f"**{section}**" in target.read_text()
            )
            if not found:
                missing.append(f"{path.relative_to(ROOT)}: {document}, {section!r}")
    assert not missing, "\n".join(missing)

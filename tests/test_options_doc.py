"""docs/options.md and ClientConfig cannot drift: the same options, the same defaults."""

from __future__ import annotations

import ast
import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from kafkaev.config import DEPRECATED_OPTIONS, ClientConfig

DOC = Path(__file__).resolve().parent.parent / "docs" / "options.md"
OPTIONS_HEADER = ("option", "type", "default", "unit", "what it does")
CELL_SPLIT = re.compile(r"(?<!\\)\|")  # a cell may hold an escaped \|
CODE = re.compile(r"`([^`]*)`")


def _tables(text: str) -> dict[tuple[str, ...], list[list[str]]]:
    """Every table of the page: its header -> its rows, each a list of cell texts."""
    tables: dict[tuple[str, ...], list[list[str]]] = {}
    rows: list[list[str]] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            rows = None
            continue
        cells = [c.strip() for c in CELL_SPLIT.split(line.strip())[1:-1]]
        if rows is None:
            rows = tables.setdefault(tuple(cells), [])
        elif not all(set(c) <= set("-:") for c in cells):  # the |---| line
            rows.append(cells)
    return tables


def _name(cell: str) -> str:
    match = re.fullmatch(r"`(\w+)`", cell)
    assert match, f"an option's name is one backquoted word, got {cell!r}"
    return match.group(1)


@pytest.fixture(scope="module")
def rows() -> dict[str, list[str]]:
    table = _tables(DOC.read_text())[OPTIONS_HEADER]
    names = [_name(r[0]) for r in table]
    assert len(names) == len(set(names)), "an option is listed twice"
    assert all(len(r) == len(OPTIONS_HEADER) for r in table)
    return dict(zip(names, table, strict=True))


OPTIONS = [f for f in fields(ClientConfig) if f.init]  # the derived fields are not options


def test_every_option_is_documented_and_nothing_else(rows):
    assert sorted(rows) == sorted(f.name for f in OPTIONS)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda f: f.name)
def test_documented_default_is_the_default(rows, option):
    cell = rows[option.name][OPTIONS_HEADER.index("default")]
    code = CODE.match(cell)
    assert code, f"{option.name}: the default is a backquoted Python literal, got {cell!r}"
    documented = ast.literal_eval(code.group(1))
    assert option.default is not MISSING
    # type too: 5 for 5.0 or 1 for True would be a different promise
    assert (type(documented), documented) == (type(option.default), option.default)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda f: f.name)
def test_every_option_says_what_it_does(rows, option):
    assert len(rows[option.name][OPTIONS_HEADER.index("what it does")]) > 20


def test_deprecated_spellings_are_listed_with_their_replacement():
    table = _tables(DOC.read_text())[("deprecated", "replacement", "conversion")]
    documented = {_name(r[0]): _name(r[1]) for r in table}
    assert documented == {old: new for old, (new, _convert) in DEPRECATED_OPTIONS.items()}

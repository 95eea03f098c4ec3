"""The Sphinx site in docs/ builds without a warning, and its options page lists every option."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from kafkaev.config import ClientConfig
from kafkaev.errors import ERRORS

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = [f.name for f in fields(ClientConfig) if f.init]

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(ROOT / "docs"), str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"sphinx failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stderr.strip() == "", proc.stderr
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def _option_rows(site: Path) -> dict[str, list[str]]:
    """The rendered options table: option name -> its cells."""
    rows: dict[str, list[str]] = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", (site / "options.html").read_text(), flags=re.S):
        cells = [" ".join(_text_of(c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        if len(cells) == 5:
            rows[cells[0]] = cells
    return rows


def _text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_every_option_is_on_the_built_page_with_its_unit_and_default(site):
    from tests.test_options_doc import OPTIONS_HEADER, _tables

    source = _tables((ROOT / "docs" / "options.md").read_text())[OPTIONS_HEADER]
    documented = {row[0].strip("`"): row for row in source}  # tests/test_options_doc.py checks these
    rendered = _option_rows(site)
    assert sorted(rendered) == sorted(OPTIONS)
    for name in OPTIONS:
        _name, _type, default, unit, _what = documented[name]
        cells = rendered[name]
        assert cells[2] == default.strip("`"), name
        assert cells[3] == unit, name


def test_the_error_table_has_every_code(site):
    text = " ".join(_text(site / "errors.html").split())
    for spec in ERRORS.values():
        assert f"{spec.code} {spec.name}" in text, spec.name


def test_every_subcommand_has_its_help_on_the_cli_page(site):
    from kafkaev.__main__ import COMMANDS

    text = " ".join(_text_of((site / "cli.html").read_text()).split())
    for name in COMMANDS:
        assert f"usage: kafkaev {name}" in text, name


def test_every_public_client_method_is_documented(site):
    import kafkaev

    text = _text_of((site / "api.html").read_text())
    public = [n for n in vars(kafkaev.Client) if not n.startswith("_")]
    missing = [n for n in public if f"{n}(" not in text and f"property{n}" not in text.replace(" ", "")]
    assert not missing, missing


def test_every_public_member_of_the_connection_stub_is_documented_on_the_api_page(site):
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from kafkaev_docs import stub_members

    members = stub_members(ROOT / "kafkaev" / "protocol" / "connection.pyi", "Connection")
    undocumented = [name for _kind, name, _node, doc in members if not doc]
    assert not undocumented, f"give these a docstring in connection.pyi: {undocumented}"
    page = (site / "api.html").read_text()
    rendered = set(re.findall(r'id="kafkaev\.Connection\.([a-z_]+)"', page))
    public = {name for _kind, name, _node, _doc in members if name != "__init__"}
    assert rendered == public
    # the compiled class has exactly the stub's public members: neither side has one the other lacks
    from kafkaev.protocol.connection import Connection

    compiled = {n for n in dir(Connection) if not n.startswith("_")}
    assert compiled == public


def test_every_public_aio_client_method_is_documented(site):
    import kafkaev.aio

    text = _text_of((site / "api.html").read_text())
    public = [n for n in vars(kafkaev.aio.Client) if not n.startswith("_")]
    missing = [n for n in public if f"{n}(" not in text and f"property{n}" not in text.replace(" ", "")]
    assert not missing, missing

"""Build-time pages for kafkaev's docs: the error-code table and the command-line help.

``.. kafkaev-errors:: client`` (or ``broker``) renders a table of ``kafkaev.errors.ERRORS``;
``.. kafkaev-cli::`` renders ``kafkaev --help`` and every subcommand's help, walking the
parser ``kafkaev.__main__.build_parser()`` builds, so neither can go stale.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

HELP_WIDTH = "88"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


class ErrorsDirective(SphinxDirective):
    required_arguments = 1  # "client" (codes below -100) or "broker"

    def run(self) -> list[nodes.Node]:
        from kafkaev.errors import ERRORS

        kind = self.arguments[0]
        if kind not in ("client", "broker"):
            raise self.error(f"kafkaev-errors: 'client' or 'broker', got {kind!r}")
        specs = sorted((s for s in ERRORS.values() if (s.code < -100) == (kind == "client")),
                       key=lambda s: s.code)
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 8 30 10 52", "",
                 "   * - code", "     - name", "     - retriable", "     - description"]
        for s in specs:
            lines += [f"   * - ``{s.code}``", f"     - ``{s.name}``", f"     - {'yes' if s.retriable else 'no'}",
                      f"     - {_cell(s.description) or '-'}"]
        return self._parse(lines)

    def _parse(self, lines: list[str]) -> list[nodes.Node]:
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source="kafkaev-docs"), container)
        return list(container.children)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


class CliDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        from kafkaev.__main__ import build_parser

        old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps to the terminal; fix it for the page
        try:
            parser = build_parser()
            out: list[nodes.Node] = [nodes.literal_block(text=parser.format_help().rstrip())]
            for name, sub in _subcommands(parser):
                out += self._section(f"kafkaev {name}", sub, 0)
        finally:
            if old is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = old
        return out

    def _section(self, title: str, parser: argparse.ArgumentParser, depth: int) -> list[nodes.Node]:
        ident = nodes.make_id(title)
        section = nodes.section(ids=[ident], names=[nodes.fully_normalize_name(title)])
        section += nodes.title(text=title)
        section += nodes.literal_block(text=parser.format_help().rstrip())
        for name, sub in _subcommands(parser):
            section += self._section(f"{title} {name}", sub, depth + 1)
        self.state.document.note_implicit_target(section, section)
        return [section]


def _drop_cython_signature(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Cython embeds a C-typed signature (``Message(str topic, int32_t partition, ...)``) as the
    docstring's first line; the page gives the Python signature in the directive instead."""
    short = name.rsplit(".", 1)[-1]
    if lines and lines[0].startswith(f"{short}(") and lines[0].rstrip().endswith(")"):
        del lines[0]
        while lines and not lines[0].strip():
            del lines[0]


def setup(app: Any) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _drop_cython_signature)
    app.add_directive("kafkaev-errors", ErrorsDirective)
    app.add_directive("kafkaev-cli", CliDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

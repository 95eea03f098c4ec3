"""Build-time pages for kafkaev's docs: the error-code table, the command-line help, and the
reference of a Cython class from its stub.

``.. kafkaev-errors:: client`` (or ``broker``) renders a table of ``kafkaev.errors.ERRORS``;
``.. kafkaev-cli::`` renders ``kafkaev --help`` and every subcommand's help, walking the
parser ``kafkaev.__main__.build_parser()`` builds; ``.. kafkaev-stub:: path.pyi Class kafkaev.Name``
renders the class's members with the signatures and docstrings of its stub (a compiled class
carries no parameter types). None of them can go stale.
"""

from __future__ import annotations

import argparse
import ast
import os
from pathlib import Path
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


ROOT = Path(__file__).resolve().parent.parent.parent
INDENT = "   "


def stub_members(path: Path, class_name: str) -> list[tuple[str, str, ast.AST, str | None]]:
    """The public members of ``class_name`` in the stub at ``path``, in order: (kind, name, node,
    docstring); kind is "method", "property" or "attribute". ``__init__`` is the constructor."""
    tree = ast.parse(path.read_text())
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    members: list[tuple[str, str, ast.AST, str | None]] = []
    for i, node in enumerate(cls.body):
        if isinstance(node, ast.FunctionDef) and (not node.name.startswith("_") or node.name == "__init__"):
            is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)
            members.append(("property" if is_property else "method", node.name, node, ast.get_docstring(node)))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and not node.target.id.startswith("_"):
            after = cls.body[i + 1] if i + 1 < len(cls.body) else None
            doc = None
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                import inspect

                doc = inspect.cleandoc(after.value.value)
            members.append(("attribute", node.target.id, node, doc))
    return members


def _signature(node: ast.FunctionDef) -> str:
    args = node.args
    args.posonlyargs = [a for a in args.posonlyargs if a.arg != "self"]
    args.args = [a for a in args.args if a.arg != "self"]
    text = f"({ast.unparse(args)})"
    return text + (f" -> {ast.unparse(node.returns)}" if node.returns is not None else "")


class StubDirective(SphinxDirective):
    required_arguments = 3  # the stub's path (from the repository root), the class, its public name

    def run(self) -> list[nodes.Node]:
        path, class_name, public = self.arguments
        stub = ROOT / path
        self.env.note_dependency(str(stub))
        members = stub_members(stub, class_name)
        init = [node for kind, name, node, _ in members if name == "__init__"]
        init_doc = [doc for _, name, _, doc in members if name == "__init__" and doc]
        signature = _signature(init[0]).removesuffix(" -> None") if init else ""  # type: ignore[arg-type]
        module_doc = ast.get_docstring(ast.parse(stub.read_text())) or ""
        lines = [f".. py:class:: {public}{signature}", ""]
        lines += [INDENT + line for line in (module_doc + "\n\n" + "\n\n".join(init_doc)).splitlines()]
        for kind, name, node, doc in members:
            if name == "__init__":
                continue
            lines.append("")
            if kind == "method":
                lines.append(f"{INDENT}.. py:method:: {name}{_signature(node)}")  # type: ignore[arg-type]
            else:
                annotation = node.returns if kind == "property" else node.annotation  # type: ignore[attr-defined]
                lines += [f"{INDENT}.. py:{kind}:: {name}", f"{INDENT * 2}:type: {ast.unparse(annotation)}"]
            lines.append("")
            lines += [INDENT * 2 + line for line in (doc or "").splitlines()]
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source=str(stub)), container)
        return list(container.children)


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
    app.add_directive("kafkaev-stub", StubDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

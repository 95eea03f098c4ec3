"""The public API as a type checker sees it: real types behind kafkaev's lazy names, typed options
that cannot drift from ClientConfig, and a user's script under `mypy --strict` catching the
mistakes a user makes (a wrong value type, a callback of the wrong arity, a misspelt option)."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import typing
from dataclasses import fields
from pathlib import Path

import pytest

import kafkaev
from kafkaev import config, types
from kafkaev.config import ClientConfig
from kafkaev.consumer import Consumer

ROOT = Path(__file__).resolve().parent.parent
MYPY_TIMEOUT_S = 300


# --- the names kafkaev exports -------------------------------------------------------------------
def _type_checking_imports() -> dict[str, str]:
    """name -> module of every import inside __init__.py's `if TYPE_CHECKING:` block."""
    tree = ast.parse((ROOT / "kafkaev" / "__init__.py").read_text())
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    names.update({alias.name: stmt.module or "" for alias in stmt.names})
    return names


def test_type_checkers_see_every_lazily_imported_name_from_its_module():
    lazy = dict(kafkaev._CLIENT_NAMES) | {name: "kafkaev.protocol.codec" for name in kafkaev._PROTO_NAMES}
    assert _type_checking_imports() == lazy


def test_import_kafkaev_stays_lazy():
    # The lazy names cost about 220 ms to import (the codec module and uvloop); `import kafkaev` must not pay it.
    code = "import sys, kafkaev; print(sorted(m for m in ('kafkaev.client', 'kafkaev.protocol.codec') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


# --- the options ----------------------------------------------------------------------------------
def test_client_options_are_the_config_fields():
    """Client(brokers, **ClientOptions): one key per ClientConfig option, none missing, none extra."""
    options = {f.name for f in fields(ClientConfig) if f.init}
    assert set(types.ClientOptions.__annotations__) | {"brokers"} == options
    assert "brokers" in inspect.signature(kafkaev.Client).parameters
    assert types.ClientOptions.__required_keys__ == frozenset()


def test_subscribe_options_are_the_consumers_keyword_arguments():
    signature = inspect.signature(Consumer.subscribe)
    keywords = {name for name, p in signature.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(types.SubscribeOptions.__annotations__) == keywords


def test_option_literals_are_the_values_config_accepts():
    assert set(typing.get_args(types.Compression)) == {c for c in config.COMPRESSION_CODECS if c is not None}
    assert set(typing.get_args(types.IsolationLevel)) == set(config.ISOLATION_LEVELS)
    assert set(typing.get_args(types.AutoOffsetReset)) == set(config.AUTO_OFFSET_RESETS)
    assert set(typing.get_args(types.AssignorName)) == set(config.KNOWN_ASSIGNORS)
    assert set(typing.get_args(types.Acks)) == {config.ACKS_NONE, config.ACKS_LEADER, config.ACKS_ALL, "all"}


# --- the editable install -------------------------------------------------------------------------
def test_editable_install_is_a_path_entry_static_tools_can_read():
    """With the flat layout, setuptools' default editable install is an import hook that mypy
    cannot see; package-dir {"": "."} makes it a plain .pth path entry to this tree."""
    tomllib = pytest.importorskip("tomllib")  # 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["package-dir"] == {"": "."}


# --- a user's script under mypy --strict ----------------------------------------------------------
USER_SCRIPT = '''\
import kafkaev
from kafkaev import KafkaError, Message, RecordMetadata, TopicPartition

reveal_type(kafkaev.Client)  # REVEAL


def delivered(md: RecordMetadata | None, err: KafkaError | None) -> None:
    print(md.offset if md is not None else err)


def delivered_without_error(md: RecordMetadata | None) -> None:
    print(md)


def handle(msg: Message) -> None:
    print(msg.topic, msg.offset, msg.key, msg.value, msg.headers)


def assigned(partitions: list[TopicPartition]) -> None:
    print(partitions)


# The correct part: every call below type-checks.
client = kafkaev.Client("127.0.0.1:9092", linger_ms=5, acks="all", compression="zstd", on_message=handle)
client.produce("events", b"key", "value", delivered, headers=[("trace", b"1"), ("trace", None)])
client.produce("events", None, bytearray(b"v"), partition=0, headers={"h": "v"}, timestamp_ms=1)
client.produce_many([("events", None, b"a"), {"topic": "events", "value": b"b"}], lambda failed: print(failed))
client.assign([("events", 0), ("events", 1, kafkaev.OFFSET_BEGINNING)])
client.seek("events", 0, 5, lambda offset, err: print(offset, err))
client.offsets_for("events", lambda offsets, err: print(offsets and offsets[0][1], err))
client.lag(lambda lag, err: print(lag and lag[("events", 0)][2], err))
client.committed([("events", 0)], lambda done, err: print(done and done[TopicPartition("events", 0)].metadata),
                 metadata=True)
client.subscribe(["events"], group_id="g", on_assign=assigned, auto_offset_reset="latest")
client.commit(lambda err: print(err), offsets={("events", 0): 5})
client.close(lambda err: kafkaev.stop())
kafkaev.run()

# The planted mistakes, one per line.
client.produce("events", None, 42)  # MISTAKE: int value
client.produce("events", None, b"v", delivered_without_error)  # MISTAKE: callback arity
kafkaev.Client(lingr_ms=5)  # MISTAKE: misspelt option
'''
DIAGNOSTIC = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")


def _lines_marked(script: str, marker: str) -> list[int]:
    return [number for number, line in enumerate(script.splitlines(), 1) if f"# {marker}" in line]


def _environment_with_this_tree(tmp_path: Path) -> Path:
    """A virtual environment over this interpreter's packages in which kafkaev is this tree through
    a .pth path entry, as `pip install -e .` installs it: mypy finds it as an installed, typed
    package (errors inside it are its own, not the user's), whatever else is installed."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(env)], check=True)
    python = env / "bin" / "python"
    site_packages = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    (Path(site_packages) / "kafkaev_under_test.pth").write_text(f"{ROOT}\n")
    return python


def test_a_users_script_under_mypy_strict(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(USER_SCRIPT)
    python = _environment_with_this_tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", os.devnull,
         "--python-executable", str(python), "--show-error-codes", "--no-color-output", script.name],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=MYPY_TIMEOUT_S,
    )
    print(proc.stdout + proc.stderr)
    diagnostics = [m for m in map(DIAGNOSTIC.match, proc.stdout.splitlines()) if m]
    assert all(m["file"] == script.name for m in diagnostics), proc.stdout  # nothing from inside kafkaev
    errors = {int(m["line"]): m["text"] for m in diagnostics if m["kind"] == "error"}

    # reveal_type(kafkaev.Client) is the class: its constructor, returning a kafkaev.client.Client.
    (reveal_line,) = _lines_marked(USER_SCRIPT, "REVEAL")
    reveals = [m["text"] for m in diagnostics if m["kind"] == "note" and int(m["line"]) == reveal_line]
    assert len(reveals) == 1 and reveals[0].startswith('Revealed type is "def (brokers: ')
    assert reveals[0].endswith('-> kafkaev.client.Client"'), reveals[0]

    # Exactly the three planted mistakes are errors, each at its line; the correct part is clean.
    int_value, arity, misspelt = _lines_marked(USER_SCRIPT, "MISTAKE")
    assert set(errors) == {int_value, arity, misspelt}, proc.stdout
    assert 'Argument 3 to "produce" of "Client" has incompatible type "int"' in errors[int_value]
    assert 'Argument 4 to "produce" of "Client" has incompatible type "Callable[[RecordMetadata | None], None]"' \
        in errors[arity]
    assert 'Unexpected keyword argument "lingr_ms" for "Client"; did you mean "linger_ms"?' in errors[misspelt]



AIO_USER_SCRIPT = '''\
import asyncio

import kafkaev
import kafkaev.aio
from kafkaev import Message, RecordMetadata, TopicPartition


async def main() -> None:
    async with kafkaev.aio.Client("127.0.0.1:9092", acks=-1, linger_ms=5) as client:
        meta: RecordMetadata = await client.produce("events", b"key", b"value", headers=[("h", b"1")])
        print(meta.offset)
        fut: asyncio.Future[RecordMetadata] = client.produce_nowait("events", None, b"value", partition=0)
        print((await fut).partition)
        await client.flush()
        client.assign([("events", 0, kafkaev.OFFSET_BEGINNING)])
        async for msg in client:
            handled: Message = msg
            print(handled.value)
            break
        batch: dict[TopicPartition, list[Message]] = await client.getmany(timeout_ms=1000, max_records=100)
        print(batch)
        offset: int = await client.seek("events", 0, 5)
        lag = await client.lag()
        print(offset, lag[("events", 0)][2])
        await client.subscribe(["events"], group_id="g", auto_offset_reset="latest")
        await client.commit({("events", 0): 5})
        committed = await client.committed([("events", 0)], metadata=True)
        print(committed[TopicPartition("events", 0)].metadata)
    async with kafkaev.aio.Admin("127.0.0.1:9092") as admin:
        print(await admin.list_topics())

    # The planted mistakes, one per line.
    async with kafkaev.aio.Client() as client:
        await client.produce("events", None, 42)  # MISTAKE: int value
        wrong: int = await client.produce("events", None, b"v")  # MISTAKE: not an int
        kafkaev.aio.Client(lingr_ms=5)  # MISTAKE: misspelt option
        print(wrong)


asyncio.run(main())
'''


def test_an_asyncio_users_script_under_mypy_strict(tmp_path):
    script = tmp_path / "aio_user_script.py"
    script.write_text(AIO_USER_SCRIPT)
    python = _environment_with_this_tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", os.devnull,
         "--python-executable", str(python), "--show-error-codes", "--no-color-output", script.name],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=MYPY_TIMEOUT_S,
    )
    print(proc.stdout + proc.stderr)
    diagnostics = [m for m in map(DIAGNOSTIC.match, proc.stdout.splitlines()) if m]
    assert all(m["file"] == script.name for m in diagnostics), proc.stdout  # nothing from inside kafkaev
    errors = {int(m["line"]): m["text"] for m in diagnostics if m["kind"] == "error"}
    int_value, not_int, misspelt = _lines_marked(AIO_USER_SCRIPT, "MISTAKE")
    assert set(errors) == {int_value, not_int, misspelt}, proc.stdout
    assert 'Argument 3 to "produce" of "Client" has incompatible type "int"' in errors[int_value]
    assert 'Incompatible types in assignment (expression has type "RecordMetadata"' in errors[not_int]
    assert 'Unexpected keyword argument "lingr_ms" for "Client"; did you mean "linger_ms"?' in errors[misspelt]

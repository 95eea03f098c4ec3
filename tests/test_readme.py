"""The README's "Command line" and "Using it" snippets, run as written, in order.

Every ```sh and ```python block of those two sections runs, unless the line just before it is
``<!-- readme-test: skip -->`` (kept for blocks that install things; at most MAX_SKIPPED). The README
starts the broker itself (``kafkaev broker start --detach``) and stops it (``kafkaev broker stop``);
the snippets give no address, so they reach it through the default-brokers rule
(``kafkaev/local_broker.py``) on whatever port it got (9092 may be taken by another run).

Everything runs with a temporary ``$HOME``, so the broker's state file is a temporary one and a
developer's own ``kafkaev broker start`` is never seen or touched. ``kafkaev`` on the snippets' PATH is
this checkout's (``python -m kafkaev``), and ``cryptography`` and ``confluent_kafka`` cannot be
imported, as on a plain ``pip install -e .``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkaev.local_broker import BROKERS_ENV, read_record, state_file
from kafkaev.testing import jars

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTIONS = ("Command line", "Using it")
SKIP_MARKER = "<!-- readme-test: skip -->"
MAX_SKIPPED = 1
LANGUAGES = ("sh", "python")
FENCE = re.compile(r"^```(\w*)\s*$")
# A shell block starts (or stops) a JVM and runs a million-record perf test on 2 shared cores.
SH_TIMEOUT_S = 300.0
PYTHON_TIMEOUT_S = 60.0
CLI_TIMEOUT_S = 240.0
# What a plain install lacks: the test and bench extras' packages the broker command must not need.
EXTRAS_ONLY_MODULES = ("cryptography", "confluent_kafka")
OUTPUT_TAIL = 3000


@dataclass(frozen=True, slots=True)
class Snippet:
    language: str
    code: str
    line: int  # of the opening fence, 1-based
    section: str
    skipped: bool

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.section}, {self.language})"


def readme_snippets(text: str, sections: tuple[str, ...] = SECTIONS) -> list[Snippet]:
    """The sh and python blocks of ``sections`` (their ### subsections included), in README order."""
    snippets: list[Snippet] = []
    section: str | None = None
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("## "):
            section = line[3:].strip()
        fence = FENCE.match(line)
        if fence and section in sections:
            start = index
            index += 1
            body: list[str] = []
            while index < len(lines) and not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            before = next((lines[i].strip() for i in range(start - 1, -1, -1) if lines[i].strip()), "")
            if fence.group(1) in LANGUAGES:
                snippets.append(Snippet(fence.group(1), "\n".join(body) + "\n", start + 1, section,
                                        before == SKIP_MARKER))
        elif fence:  # a block outside the sections: skip its body so a "## " inside it is not a heading
            index += 1
            while index < len(lines) and not lines[index].startswith("```"):
                index += 1
        index += 1
    return snippets


def test_the_sections_have_runnable_snippets_and_few_skips():
    snippets = readme_snippets(README.read_text())
    assert {s.section for s in snippets} == set(SECTIONS)
    assert {s.language for s in snippets} == set(LANGUAGES)
    assert sum(s.skipped for s in snippets) <= MAX_SKIPPED, "keep the skipped blocks few"
    runnable = [s for s in snippets if not s.skipped]
    assert runnable[0].code.startswith("kafkaev broker start --detach"), "the README starts its own broker"
    assert runnable[-1].code.strip() == "kafkaev broker stop", "and stops it at the end"


def test_the_extractor_honours_sections_and_the_skip_marker():
    text = (
        "## Intro\n```sh\necho intro\n```\n## Using it\n```python\nprint(1)\n```\n"
        f"{SKIP_MARKER}\n```sh\npip install x\n```\n### Sub\n```text\nnot code\n```\n"
        "```sh\necho sub\n```\n## Command line\n```sh\necho cli\n```\n## Tests\n```sh\necho no\n```\n"
    )
    found = [(s.section, s.language, s.code, s.skipped) for s in readme_snippets(text)]
    assert found == [
        ("Using it", "python", "print(1)\n", False),
        ("Using it", "sh", "pip install x\n", True),
        ("Using it", "sh", "echo sub\n", False),
        ("Command line", "sh", "echo cli\n", False),
    ]


def _plain_install_env(tmp_path: Path) -> dict[str, str]:
    """The snippets' environment: a temporary HOME, this checkout's kafkaev, no extras' packages."""
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kafkaev"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kafkaev "$@"\n')
    shim.chmod(0o755)
    blocked = tmp_path / "plain-install"
    for module in EXTRAS_ONLY_MODULES:
        (blocked / module).mkdir(parents=True)
        (blocked / module / "__init__.py").write_text(
            f"raise ImportError('{module} is not installed by a plain pip install -e . (tests/test_readme.py)')\n")
    env = {k: v for k, v in os.environ.items() if k != BROKERS_ENV}
    env.update(
        HOME=str(home),
        # The real jar cache: a temporary HOME must not make Maven resolve the broker again.
        KAFKAEV_KAFKA_CACHE=str(jars.cache_root()),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join([str(blocked), str(ROOT)]),
    )
    return env


def _run(snippet: Snippet, env: dict[str, str], workdir: Path) -> subprocess.CompletedProcess[str]:
    if snippet.language == "sh":
        command, timeout = ["sh", "-e", "-c", snippet.code], SH_TIMEOUT_S
    else:
        script = workdir / f"readme_{snippet.line}.py"
        script.write_text(snippet.code)
        command, timeout = [sys.executable, str(script)], PYTHON_TIMEOUT_S
    try:
        return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{snippet} hung: no exit within {timeout:.0f}s\n{exc.stdout!r}\n{exc.stderr!r}")


def _kafkaev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkaev", *args], env=env, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(bool(os.environ.get(BROKERS_ENV, "").strip()),
                    reason=f"${BROKERS_ENV} names an external cluster: no local broker is started")
def test_readme_runs_as_written(tmp_path):
    jars.ensure_jars()  # resolved under the real HOME, before the snippets get a temporary one
    own_record = state_file()
    own_before = own_record.read_bytes() if own_record.exists() else None
    env = _plain_install_env(tmp_path)
    record_path = Path(env["HOME"]) / ".cache" / "kafkaev" / "broker.json"
    workdir = tmp_path / "work"
    workdir.mkdir()
    try:
        for snippet in readme_snippets(README.read_text()):
            if snippet.skipped:
                continue
            result = _run(snippet, env, workdir)
            assert result.returncode == 0, (
                f"{snippet} exited with status {result.returncode}\n--- code\n{snippet.code}"
                f"--- stdout\n{result.stdout[-OUTPUT_TAIL:]}\n--- stderr\n{result.stderr[-OUTPUT_TAIL:]}")
            if "kafkaev broker start --detach" in snippet.code:
                record = read_record(record_path)
                assert record is not None and record.alive(), f"no live broker recorded in {record_path}"
                assert f"broker ready: {record.bootstrap}" in result.stdout
                assert f"broker running: {record.bootstrap} (pid {record.pid}, Apache Kafka" in result.stdout
        # The README stopped its broker: status and stop now say so in one line, exit status 1.
        for action in ("status", "stop"):
            after = _kafkaev(env, "broker", action, "--state-file", str(record_path))
            assert after.returncode == 1, after
            assert after.stderr.count("\n") == 1 and "no broker is running" in after.stderr, after.stderr
    finally:
        leftover = read_record(record_path)
        if leftover is not None and leftover.alive():
            _kafkaev(env, "broker", "stop", "--state-file", str(record_path))
    assert (own_record.read_bytes() if own_record.exists() else None) == own_before, "the developer's broker record changed"

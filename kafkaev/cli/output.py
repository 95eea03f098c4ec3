"""How ``kafkaev consume`` prints a record: kcat's ``-f`` tokens, str.format templates, ``-J``.

Every printer returns bytes, written to stdout's binary buffer: a key or value is never decoded
and encoded again, so whatever bytes were produced are the bytes printed (``%s`` of a JPEG is
the JPEG). A format is checked when it is made, before any record is read.
"""

from __future__ import annotations

import base64
import json
import re
import string
import struct
from collections.abc import Callable
from typing import Any

from kafkaev.cli.common import UsageError, unescape

# kcat's tokens (its -f help), and %v, kafkaev's earlier name for the value.
VALUE_TOKENS = (b"%s", b"%v")
FORMAT_TOKENS: dict[bytes, str] = {
    b"%t": "topic", b"%p": "partition", b"%o": "offset", b"%k": "key", b"%K": "key length (-1 for null)",
    b"%s": "value", b"%v": "value (the same as %s)", b"%S": "value length (-1 for null)",
    b"%R": "value length (-1 for null) as a big-endian 32-bit integer", b"%T": "timestamp (ms)",
    b"%h": "headers (name=value,...)", b"%%": "a literal %",
}
TOKEN = re.compile(b"%.?", re.DOTALL)  # every '%' and what follows it
NULL_LENGTH = -1  # %K, %S and %R of a null key or value, as kcat prints it
BINARY_LENGTH = struct.Struct(">i")
NULL_TEXT = b"NULL"  # -Z: what a null key or value prints as (kcat's word)
BASE64_MARKER = "base64"  # -J: {"base64": "..."} holds bytes that are not UTF-8
HEADER_SEPARATOR = b","
# The brace form's fields, and one record of each field's type: a template that renders it
# renders every record.
SAMPLE_FIELDS: dict[str, Any] = {"topic": "t", "partition": 0, "offset": 0, "key": "", "key_length": 0,
                                 "value": "", "value_length": 0, "timestamp": 0, "headers": ""}
# The brace form works on text; surrogateescape carries every byte through it unchanged.
TEXT_ERRORS = "surrogateescape"

Render = Callable[[Any], bytes]
Field = Callable[[Any], bytes]


def _raw(data: Any) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, str):
        return data.encode("utf-8", TEXT_ERRORS)
    return bytes(data)


def _length(data: Any) -> int:
    return NULL_LENGTH if data is None else len(data)


def _headers(msg: Any) -> bytes:
    return HEADER_SEPARATOR.join(name.encode("utf-8", TEXT_ERRORS) + b"=" + (_raw(value) or b"")
                                 for name, value in (msg.headers or ()))


def _fields(null: bytes) -> dict[bytes, Field]:
    def key(msg: Any) -> bytes:
        data = _raw(msg.key)
        return null if data is None else data

    def value(msg: Any) -> bytes:
        data = _raw(msg.value)
        return null if data is None else data

    return {
        b"%t": lambda msg: msg.topic.encode(),
        b"%p": lambda msg: b"%d" % msg.partition,
        b"%o": lambda msg: b"%d" % msg.offset,
        b"%k": key,
        b"%K": lambda msg: b"%d" % _length(msg.key),
        b"%s": value,
        b"%v": value,
        b"%S": lambda msg: b"%d" % _length(msg.value),
        b"%R": lambda msg: BINARY_LENGTH.pack(_length(msg.value)),
        b"%T": lambda msg: b"%d" % msg.timestamp,
        b"%h": _headers,
        b"%%": lambda _msg: b"%",
    }


def _percent_format(spec: bytes, null: bytes) -> Render:
    """kcat's format: literal bytes and %-tokens, braces literal."""
    fields = _fields(null)
    parts: list[bytes | Field] = []
    at = 0
    for match in TOKEN.finditer(spec):
        token = match.group(0)
        if token not in FORMAT_TOKENS:
            known = " ".join(t.decode() for t in FORMAT_TOKENS if t != b"%%")
            shown = token.decode("utf-8", "backslashreplace")
            raise UsageError(f"--format: unknown placeholder {shown!r} (known: {known}; %% for a literal %)")
        if match.start() > at:
            parts.append(spec[at:match.start()])
        parts.append(fields[token])
        at = match.end()
    if at < len(spec):
        parts.append(spec[at:])

    def render(msg: Any) -> bytes:
        return b"".join(part if type(part) is bytes else part(msg) for part in parts)  # type: ignore[operator]

    return render


def _text(data: Any, null: str) -> str:
    raw = _raw(data)
    return null if raw is None else raw.decode("utf-8", TEXT_ERRORS)


def _brace_format(spec: bytes, null: bytes) -> Render:
    template = spec.decode("utf-8", TEXT_ERRORS)
    known = " ".join("{" + name + "}" for name in SAMPLE_FIELDS)
    try:
        for _literal, field, _spec, _conversion in string.Formatter().parse(template):
            if field is not None and field not in SAMPLE_FIELDS:
                raise UsageError(f"--format: unknown field {{{field}}} (known: {known}; {{{{ and }}}} for literal "
                                 f"braces)")
        template.format_map(SAMPLE_FIELDS)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError(f"--format: {exc} in {template!r} ({{{{ and }}}} for literal braces)") from None
    null_text = null.decode()

    def render(msg: Any) -> bytes:
        return template.format_map({
            "topic": msg.topic, "partition": msg.partition, "offset": msg.offset,
            "key": _text(msg.key, null_text), "key_length": _length(msg.key),
            "value": _text(msg.value, null_text), "value_length": _length(msg.value),
            "timestamp": msg.timestamp, "headers": _headers(msg).decode("utf-8", TEXT_ERRORS),
        }).encode("utf-8", TEXT_ERRORS)

    return render


def formatter(spec: str, null: bool = False) -> Render:
    """The record printer for ``-f spec`` (``null``: -Z); a mistake in it is a UsageError now.

    A spec with a kcat %-token is read kcat's way, its braces literal (``%k {"v": %s}``); one
    without any is a str.format template when it has braces."""
    raw = unescape(spec, "--format")
    null_bytes = NULL_TEXT if null else b""
    if not any(token in raw for token in FORMAT_TOKENS) and (b"{" in raw or b"}" in raw):
        return _brace_format(raw, null_bytes)
    return _percent_format(raw, null_bytes)


def _json_data(data: Any) -> Any:
    """Text as a JSON string, other bytes as {"base64": ...}: a value is never silently altered."""
    if data is None or isinstance(data, str):
        return data
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {BASE64_MARKER: base64.b64encode(raw).decode("ascii")}


def json_record(msg: Any) -> bytes:
    record = {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset, "timestamp": msg.timestamp,
              "key": _json_data(msg.key), "value": _json_data(msg.value),
              "headers": [[_json_data(k), _json_data(v)] for k, v in (msg.headers or ())]}
    return json.dumps(record, ensure_ascii=False).encode() + b"\n"

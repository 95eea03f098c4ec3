"""kcat's record formats and delimiters on the command line, byte for byte, against the real broker:
``-f`` tokens (``%s %S %k %K %R %t %p %o %T %h``), binary values through produce and consume
unchanged, and the escapes of ``-k`` and ``-D``."""

from __future__ import annotations

import struct

from cli_helpers import one_line_error, run_cli
from producer_helpers import read_back

# Every byte value, and none of them a newline: not UTF-8 (0x80-0xff alone), NUL, CR, tab.
BINARY = bytes(b for b in range(256) if b != 0x0A)


def _consume(topic: str, *args: str, brokers: str) -> bytes:
    result = run_cli("consume", topic, "-o", "beginning", "-e", *args, brokers=brokers)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def _produce(topic: str, *args: str, stdin: bytes = b"", brokers: str) -> None:
    result = run_cli("produce", topic, *args, stdin=stdin, brokers=brokers)
    assert result.returncode == 0, result.stderr.decode()


def test_non_utf8_bytes_go_through_produce_and_consume_unchanged(kafka, topic, tmp_path):
    b = kafka.bootstrap
    image = tmp_path / "blob.bin"
    image.write_bytes(BINARY + b"\n" + BINARY)  # a file is one record: newlines included
    _produce(topic, str(image), brokers=b)
    _produce(topic, stdin=BINARY + b"\n", brokers=b)  # a line: everything but the newline
    _produce(topic, "-k", "\\t", stdin=b"\xff\xfe\tv\x80\n", brokers=b)
    # the oracle reads what was written
    got = [(m.key(), m.value()) for m in read_back(b, topic, 3)]
    assert got == [(None, BINARY + b"\n" + BINARY), (None, BINARY), (b"\xff\xfe", b"v\x80")]
    # and consume prints exactly those bytes
    assert _consume(topic, "-f", "%s", brokers=b) == BINARY + b"\n" + BINARY + BINARY + b"v\x80"
    assert _consume(topic, "-f", "%k|%s\\n", "-c", "3", brokers=b).endswith(b"\xff\xfe|v\x80\n")
    # the brace form carries the bytes through too
    braced = _consume(topic, "-f", "{offset}:{value}\\n", brokers=b)
    assert braced == b"0:" + BINARY + b"\n" + BINARY + b"\n1:" + BINARY + b"\n2:v\x80\n"


def test_every_kcat_format_token(kafka, topic):
    b = kafka.bootstrap
    _produce(topic, "-k", ":", "-H", "h1=x", "-H", "h2=y", stdin=b"key:value\n", brokers=b)
    _produce(topic, stdin=b"\n", brokers=b)  # keyless, empty value
    records = read_back(b, topic, 2)
    stamps = [m.timestamp()[1] for m in records]
    printed = _consume(topic, "-f", "%t|%p|%o|%k|%K|%s|%S|%T|%h|%%\\n", brokers=b)
    assert printed.decode().splitlines() == [
        f"{topic}|0|0|key|3|value|5|{stamps[0]}|h1=x,h2=y|%",
        f"{topic}|0|1||-1||0|{stamps[1]}||%",
    ]
    # %R: the value's length as a big-endian 32-bit integer, then the value (a framed stream)
    framed = _consume(topic, "-f", "%R%s", brokers=b)
    assert framed == struct.pack(">i", 5) + b"value" + struct.pack(">i", 0)
    # -Z prints a null key as NULL; an empty value stays empty; %v is %s
    assert _consume(topic, "-Z", "-f", "[%k|%v]\\n", brokers=b) == b"[key|value]\n[NULL|]\n"
    # the brace form's lengths
    assert _consume(topic, "-f", "{key_length} {value_length}\\n", brokers=b) == b"3 5\n-1 0\n"
    # escapes in the format: \xNN is any byte, \\ a backslash
    assert _consume(topic, "-c", "1", "-f", "%o\\x00\\\\\\r\\n", brokers=b) == b"0\x00\\\r\n"


def test_key_separator_and_record_delimiter_take_escapes(kafka, make_topic):
    b = kafka.bootstrap
    tabbed = make_topic()
    _produce(tabbed, "-k", "\\t", stdin=b"k1\tv1\nk2\tv\t2\nno key\n", brokers=b)
    assert [(m.key(), m.value()) for m in read_back(b, tabbed, 3)] == [
        (b"k1", b"v1"), (b"k2", b"v\t2"), (None, b"no key")]
    hexed = make_topic()
    _produce(hexed, "-k", "\\x01", "-D", "\\x00", stdin=b"a\x01line\nwith newline\x00b\x01two\x00", brokers=b)
    assert [(m.key(), m.value()) for m in read_back(b, hexed, 2)] == [
        (b"a", b"line\nwith newline"), (b"b", b"two")]
    slashed = make_topic()
    # a literal backslash as the separator, and a two-byte record delimiter; the last record needs none
    _produce(slashed, "-k", "\\\\", "-D", "\\r\\n", stdin=b"k\\v\r\nlast\\one", brokers=b)
    assert [(m.key(), m.value()) for m in read_back(b, slashed, 2)] == [(b"k", b"v"), (b"last", b"one")]


def test_mistakes_in_formats_and_delimiters_are_usage_errors(kafka, topic):
    b = kafka.bootstrap
    for args, reason in ((("produce", topic, "-k", "\\x4"), "--key-separator: \\x needs two hex digits"),
                         (("produce", topic, "-D", ""), "--delimiter must not be empty"),
                         (("produce", topic, "-k", ""), "--key-separator must not be empty"),
                         (("consume", topic, "-f", "%s\\xg1"), "--format: \\x needs two hex digits"),
                         (("consume", topic, "-f", "%Q"), "unknown placeholder '%Q'"),
                         (("consume", topic, "-p", "-1"), "--partition must be >= 0, got -1"),
                         (("produce", topic, "-p", "-1"), "--partition must be >= 0, got -1"),
                         (("consume", topic, "-c", "0"), "--count must be >= 1, got 0")):
        line = one_line_error(run_cli(*args, brokers=b), args[0], status=2)
        assert reason in line, (args, line)


def test_produce_to_a_partition_the_topic_lacks_is_one_line(kafka, make_topic):
    topic = make_topic(partitions=3)
    line = one_line_error(run_cli("produce", topic, "-p", "9", stdin=b"a\nb\n", brokers=kafka.bootstrap), "produce")
    assert f"UNKNOWN_PARTITION (-190): produce: 'partition' 9 is out of range for topic '{topic}' (3 partitions)" in line
    assert _consume(topic, brokers=kafka.bootstrap) == b""  # nothing was written

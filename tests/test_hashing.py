"""CRC-32C against the RFC 3720 vectors and across both implementations;
murmur2 against the Java client itself (Utils.murmur2 run in a JVM) and against
librdkafka's Java-compatible partitioner on a real broker."""

import random
import shutil
import subprocess
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaev.protocol.codec import _crc32c_combine, _crc32c_implementation, _crc32c_table, crc32c, murmur2
from kafkaev.testing import jars


@pytest.mark.parametrize(
    "data, expected",
    [
        (bytes(32), 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
        (b"123456789", 0xE3069283),
        (b"", 0),
    ],
)
def test_crc32c_rfc3720_vectors(data, expected):
    assert crc32c(data) == expected
    assert _crc32c_table(data) == expected


@given(st.binary(max_size=3000), st.integers(0, 64))
def test_crc32c_hardware_and_table_paths_agree_at_any_alignment(data, offset):
    # memoryview slices start at every alignment, exercising the unaligned head loop
    view = memoryview(b"\x00" * offset + data)[offset:]
    assert crc32c(view) == _crc32c_table(data)


@pytest.mark.parametrize("length", [767, 768, 769, 775, 776, 1536, 24575, 24576, 24583, 49152 + 800, 1 << 20])
@pytest.mark.parametrize("offset", [0, 3])
def test_crc32c_interleaved_blocks_agree_with_the_table(length, offset):
    # the hardware path runs three streams over 3 x 8 KiB and 3 x 256-byte blocks and joins
    # them with shift tables: every boundary between those regimes must give the same CRC
    data = random.Random(length).randbytes(length + offset)
    view = memoryview(data)[offset:]
    assert crc32c(view) == _crc32c_table(view)
    assert crc32c(view[100:], crc32c(view[:100])) == crc32c(view)


@given(st.binary(max_size=500), st.binary(max_size=500))
def test_crc32c_continues_a_running_checksum(a, b):
    assert crc32c(b, crc32c(a)) == crc32c(a + b)
    assert _crc32c_table(b, _crc32c_table(a)) == crc32c(a + b)


@given(st.binary(max_size=300), st.binary(max_size=3000), st.integers(0, 3))
def test_crc32c_of_two_parts_combines_into_the_crc32c_of_both(a, b, repeat):
    b = b * (1 + repeat * 700)  # up to ~6 MB: lengths with many bits set
    assert _crc32c_combine(crc32c(a), crc32c(b), len(b)) == crc32c(a + b)


def test_crc32c_is_not_plain_crc32_and_reports_its_path():
    assert crc32c(b"123456789") != zlib.crc32(b"123456789")
    assert _crc32c_implementation() in ("sse4.2", "table")
    assert crc32c(bytearray(b"123456789")) == 0xE3069283
    with pytest.raises(TypeError, match="'data' must be bytes-like"):
        crc32c("text")


# Kafka's UtilsTest.testMurmur2 expected values (signed Java ints) before toPositive.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key, signed", sorted(JAVA_MURMUR2.items()))
def test_murmur2_java_vectors(key, signed):
    assert murmur2(key) == signed & 0x7FFFFFFF


def test_murmur2_accepts_str_and_buffers():
    assert murmur2("foobar") == murmur2(b"foobar") == murmur2(bytearray(b"foobar"))
    assert murmur2(memoryview(b"xfoobar")[1:]) == murmur2(b"foobar")
    assert murmur2("é") == murmur2("é".encode())
    with pytest.raises(TypeError, match="'key' must be bytes-like or str"):
        murmur2(42)


JAVA_ORACLE = """
import org.apache.kafka.common.utils.Utils;
import java.io.*;
import java.util.HexFormat;
public class Murmur2Oracle {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            out.append(Utils.toPositive(Utils.murmur2(HexFormat.of().parseHex(line)))).append('\\n');
        }
        System.out.print(out);
    }
}
"""


def test_murmur2_matches_java_utils_for_random_keys(tmp_path):
    """The Java client's own Utils.murmur2 is the oracle (no broker needed)."""
    if shutil.which("java") is None:
        pytest.skip("needs a JVM")
    rng = random.Random(2024)
    keys = [rng.randbytes(rng.randrange(0, 64)) for _ in range(3000)] + list(JAVA_MURMUR2)
    source = tmp_path / "Murmur2Oracle.java"
    source.write_text(JAVA_ORACLE)
    result = subprocess.run(
        ["java", "-cp", jars.classpath(), str(source)],
        input="\n".join(key.hex() for key in keys) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    expected = [int(line) for line in result.stdout.split()]
    assert len(expected) == len(keys)
    mismatches = [(k, murmur2(k), e) for k, e in zip(keys, expected, strict=True) if murmur2(k) != e]
    assert mismatches == []


def test_murmur2_matches_librdkafka_partition_choice(kafka, make_topic):
    """librdkafka's murmur2_random partitioner is Java-compatible: every keyed record
    lands on partition murmur2(key) % 12."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    partitions = 12
    topic = make_topic(partitions=partitions)
    rng = random.Random(7)
    keys = {rng.randbytes(rng.randrange(1, 40)) for _ in range(3000)}
    delivered: dict[bytes, int] = {}
    failures = []

    def on_delivery(err, msg):
        if err is not None:
            failures.append(err)
        else:
            delivered[msg.key()] = msg.partition()

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": kafka.bootstrap, "partitioner": "murmur2_random", "linger.ms": 5}
    )
    for key in keys:
        producer.produce(topic, key=key, value=b"v", on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert failures == []
    assert len(delivered) == len(keys)
    wrong = {key: part for key, part in delivered.items() if murmur2(key) % partitions != part}
    assert wrong == {}
    assert len(set(delivered.values())) == partitions  # the keys really spread over every partition

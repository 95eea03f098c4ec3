"""The command line's TLS and SASL flags (and their -X kcat/Java names) against the real broker's
SSL, SASL_PLAINTEXT and SASL_SSL listeners: every subcommand that talks to a broker takes them.
What goes in over a secured listener is read back over PLAINTEXT by confluent-kafka."""

from __future__ import annotations

import uuid

from cli_helpers import one_line_error, run_cli
from producer_helpers import read_back

RECORDS = b"".join(b"k%d:v%d\n" % (i, i) for i in range(20))
EXPECTED = [(b"k%d" % i, b"v%d" % i) for i in range(20)]


def _ok(*args: str, stdin: bytes = b"") -> bytes:
    result = run_cli(*args, stdin=stdin)
    assert result.returncode == 0, (args, result.stderr.decode())
    assert result.stderr.decode().count("\n") <= 1, result.stderr.decode()  # no warning lines
    return result.stdout


def _ssl_flags(cluster) -> list[str]:
    return ["-b", cluster.ssl_bootstrap, "--ca-file", str(cluster.ca_cert), "--cert-file", str(cluster.client_cert),
            "--key-file", str(cluster.client_key)]


def _round_trip(cluster, topic: str, flags: list[str]) -> None:
    """produce, consume (by assignment and in a group), metadata, topics and groups over ``flags``."""
    _ok("produce", topic, "-k", ":", *flags, stdin=RECORDS)
    assert [(m.key(), m.value()) for m in read_back(cluster.bootstrap, topic, 20)] == EXPECTED
    printed = _ok("consume", topic, "-o", "beginning", "-e", "-f", "%k=%s\\n", *flags)
    assert printed.splitlines() == [b"%s=%s" % kv for kv in EXPECTED]
    group = f"cli-secure-{uuid.uuid4().hex[:8]}"
    assert len(_ok("consume", topic, "-G", group, "-o", "beginning", "-c", "20", *flags).splitlines()) == 20
    assert f'topic "{topic}" with 1 partitions'.encode() in _ok("metadata", "-t", topic, *flags)
    assert topic.encode() in _ok("topics", "list", *flags).split()
    assert group.encode() in _ok("groups", "list", *flags)
    lag = _ok("groups", "lag", group, *flags).decode()
    assert f"{topic}\t0\t20\t20\t0" in lag


def test_mutual_tls_flags(secure_kafka, topic):
    _round_trip(secure_kafka, topic, _ssl_flags(secure_kafka))


def test_sasl_plain_flags_over_plaintext(secure_kafka, topic):
    user = secure_kafka.sasl_plain
    flags = ["-b", secure_kafka.sasl_bootstrap, "--security-protocol", "sasl_plaintext", "--sasl-mechanism",
             user.mechanism, "--sasl-username", user.username, "--sasl-password", user.password]
    _round_trip(secure_kafka, topic, flags)


def test_sasl_ssl_scram_through_dash_X_with_kcat_and_java_names(secure_kafka, topic):
    user = secure_kafka.sasl_scram_sha_512
    kcat = ["-b", secure_kafka.sasl_ssl_bootstrap, "-X", "security.protocol=SASL_SSL",
            "-X", f"ssl.ca.location={secure_kafka.ca_cert}", "-X", f"sasl.mechanisms={user.mechanism}",
            "-X", f"sasl.username={user.username}", "-X", f"sasl.password={user.password}"]
    _round_trip(secure_kafka, topic, kcat)
    java = ["-b", secure_kafka.sasl_ssl_bootstrap, "-X", "security.protocol=SASL_SSL",
            "-X", f"ssl.truststore.location={secure_kafka.ca_cert}", "-X", f"sasl.mechanism={user.mechanism}",
            "-X", f"sasl.username={user.username}", "-X", f"sasl.password={user.password}",
            "-X", "ssl.endpoint.identification.algorithm=https"]
    assert len(_ok("consume", topic, "-o", "beginning", "-e", *java).splitlines()) == 20
    produced = run_cli("perf", "produce", topic, "-n", "200", "-s", "20", *java)
    assert produced.returncode == 0, produced.stderr.decode()


def test_security_mistakes_are_one_line(secure_kafka, topic, tmp_path):
    user = secure_kafka.sasl_scram_sha_256
    sasl = ["-b", secure_kafka.sasl_bootstrap, "--sasl-mechanism", user.mechanism, "--sasl-username", user.username]
    wrong = one_line_error(run_cli("metadata", *sasl, "--sasl-password", "not-the-password"), "metadata")
    assert "AUTHENTICATION" in wrong
    # the broker's certificate is not signed by the system's CAs
    untrusted = one_line_error(run_cli("topics", "list", "-b", secure_kafka.ssl_bootstrap,
                                       "--security-protocol", "SSL"), "topics")
    assert "SSL" in untrusted
    missing = tmp_path / "nope.pem"
    line = one_line_error(run_cli("consume", topic, "-e", "--ca-file", str(missing)), "consume")
    assert f"--ca-file: no such file: {missing}" in line
    not_pem = tmp_path / "empty.pem"
    not_pem.write_text("not a certificate\n")
    line = one_line_error(run_cli("produce", topic, "--ca-file", str(not_pem)), "produce")
    assert "the TLS files cannot be used" in line
    for args, reason in (
        (["--security-protocol", "SSL", "--sasl-username", "u", "--sasl-password", "p"],
         "--sasl-username needs SASL: --security-protocol SASL_PLAINTEXT or SASL_SSL, not SSL"),
        (["--security-protocol", "PLAINTEXT", "--ca-file", str(secure_kafka.ca_cert)],
         "--ca-file needs TLS: --security-protocol SSL or SASL_SSL, not PLAINTEXT"),
        (["--sasl-username", "u"], "SASL needs --sasl-password"),
        (["--key-file", str(secure_kafka.client_key)], "--key-file needs --cert-file"),
        (["-X", "security.protocol=KERBEROS"], "-X security.protocol: expected one of PLAINTEXT, SSL"),
        (["-X", "sasl.mechanism=GSSAPI"], "-X sasl.mechanism: expected one of PLAIN, SCRAM-SHA-256"),
        (["-X", "tls=true", "--ca-file", str(secure_kafka.ca_cert)], "-X tls and the TLS flags"),
    ):
        line = one_line_error(run_cli("metadata", "-b", secure_kafka.bootstrap, *args), "metadata", status=2)
        assert reason in line, (args, line)
    bad_choice = run_cli("metadata", "--sasl-mechanism", "GSSAPI")
    assert bad_choice.returncode == 2 and b"invalid choice: 'GSSAPI'" in bad_choice.stderr

"""TLS material made at test time: a CA, a broker certificate for 127.0.0.1/localhost, a client certificate.

Everything is PEM, which both sides read directly: Python clients take the paths, and Kafka 4.x takes
``ssl.keystore.type=PEM`` / ``ssl.truststore.type=PEM``. Nothing is cached between runs, so an expired or
leaked key never outlives the test directory that holds it.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

RSA_KEY_BITS = 2048
RSA_PUBLIC_EXPONENT = 65537
VALIDITY = datetime.timedelta(days=2)
# Clock skew between certificate creation and the broker's first handshake.
BACKDATE = datetime.timedelta(hours=1)
BROKER_COMMON_NAME = "kafkaev-test-broker"
CLIENT_COMMON_NAME = "kafkaev-test-client"


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Paths of the PEM files for one test cluster."""

    ca_cert: Path
    broker_cert: Path
    broker_key: Path
    # Certificate then key in one file: what Kafka's PEM keystore location expects.
    broker_keystore: Path
    client_cert: Path
    client_key: Path


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=RSA_PUBLIC_EXPONENT, key_size=RSA_KEY_BITS)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    # Unencrypted PKCS#8: the form Kafka's PEM keystore reads without a key password.
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kafkaev tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _leaf(
    common_name: str,
    key: rsa.RSAPrivateKey,
    ca_cert: x509.Certificate,
    ca_key: rsa.RSAPrivateKey,
    usage: x509.ObjectIdentifier,
    now: datetime.datetime,
) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
    return builder.sign(ca_key, hashes.SHA256())


def make_tls_files(directory: Path) -> TlsFiles:
    """Write a fresh CA, broker and client certificate with their keys into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    ca_key = _new_key()
    ca_name = _name("kafkaev-test-ca")
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    broker_key = _new_key()
    broker_cert = _leaf(BROKER_COMMON_NAME, broker_key, ca_cert, ca_key, ExtendedKeyUsageOID.SERVER_AUTH, now)
    client_key = _new_key()
    client_cert = _leaf(CLIENT_COMMON_NAME, client_key, ca_cert, ca_key, ExtendedKeyUsageOID.CLIENT_AUTH, now)

    files = TlsFiles(
        ca_cert=directory / "ca.pem",
        broker_cert=directory / "broker.pem",
        broker_key=directory / "broker.key",
        broker_keystore=directory / "broker-keystore.pem",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
    )
    files.ca_cert.write_bytes(_cert_pem(ca_cert))
    files.broker_cert.write_bytes(_cert_pem(broker_cert))
    files.broker_key.write_bytes(_key_pem(broker_key))
    files.broker_keystore.write_bytes(_cert_pem(broker_cert) + _key_pem(broker_key))
    files.client_cert.write_bytes(_cert_pem(client_cert))
    files.client_key.write_bytes(_key_pem(client_key))
    for key_path in (files.broker_key, files.broker_keystore, files.client_key):
        key_path.chmod(0o600)
    return files

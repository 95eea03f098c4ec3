"""SASL client state machines against the RFC test vectors and malformed server messages."""

import pytest

from kafkaev.protocol.sasl import PlainAuthenticator, SASLFailure, ScramAuthenticator, escape_saslname

# RFC 7677 section 3.
RFC7677_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC7677_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC7677_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc_scram() -> ScramAuthenticator:
    return ScramAuthenticator("sha256", "user", "pencil", nonce=RFC7677_NONCE)


def test_scram_sha256_matches_rfc7677_exchange():
    auth = rfc_scram()
    assert auth.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert auth.step(RFC7677_SERVER_FIRST) == RFC7677_CLIENT_FINAL
    assert not auth.done
    assert auth.step(RFC7677_SERVER_FINAL) is None
    assert auth.done


def test_scram_rejects_wrong_server_signature():
    auth = rfc_scram()
    auth.step(RFC7677_SERVER_FIRST)
    with pytest.raises(SASLFailure, match="does not verify"):
        auth.step(b"v=" + b"A" * 44)


def test_scram_rejects_server_error_and_foreign_nonce_and_weak_iterations():
    with pytest.raises(SASLFailure, match="refused: invalid-proof"):
        rfc_scram().step(b"e=invalid-proof")
    with pytest.raises(SASLFailure, match="nonce"):
        rfc_scram().step(b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(SASLFailure, match="iterations"):
        rfc_scram().step(RFC7677_SERVER_FIRST.replace(b"i=4096", b"i=1"))
    with pytest.raises(SASLFailure, match="lacks attribute 's'"):
        rfc_scram().step(b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096")
    with pytest.raises(SASLFailure, match="malformed"):
        rfc_scram().step(b"garbage")


def test_scram_username_escaping():
    assert escape_saslname("a=b,c") == "a=3Db=2Cc"
    auth = ScramAuthenticator("sha512", "a=b,c", "pw", nonce="N")
    assert auth.first() == b"n,,n=a=3Db=2Cc,r=N"


def test_plain_message():
    auth = PlainAuthenticator("alice", "secret")
    assert auth.first() == b"\0alice\0secret"
    assert auth.step(b"") is None and auth.done

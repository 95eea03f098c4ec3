"""A broker certificate is verified at every connect: when the certificate behind an address
changes between one connection and the reconnect after it, the new one is checked again from
scratch (no session or pinned result carries over), and a certificate of another CA is refused.
A TLS front (an asyncio server, its certificate swappable) before a fake broker stands in for a
broker whose certificate is replaced: a real broker's keystore cannot be swapped under a test."""

from __future__ import annotations

import asyncio
import ssl
import time

from conn_support import connect
from fake_broker import FakeBroker
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.protocol.connection import Connection
from kafkaev.security import TLSConfig
from kafkaev.testing.certs import make_tls_files

REFUSED_WITHIN_S = 10.0


class TlsFront:
    """TLS on a loopback port, each connection piped to ``target_port`` in plaintext."""

    def __init__(self, target_port: int, certfile: str, keyfile: str) -> None:
        self.target_port = target_port
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(certfile, keyfile)
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    def use_certificate(self, certfile: str, keyfile: str) -> None:
        # Later handshakes present this one; live connections keep theirs.
        self.context.load_cert_chain(certfile, keyfile)

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._pipe, "127.0.0.1", 0, ssl=self.context)
        return self.server.sockets[0].getsockname()[1]

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers += [writer, up_writer]

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                dst.close()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))

    def drop_connections(self) -> None:
        for writer in self.writers:
            writer.close()
        self.writers = []

    async def stop(self) -> None:
        self.drop_connections()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def test_a_certificate_replaced_before_a_reconnect_is_verified_again(loop, tmp_path):
    trusted = make_tls_files(tmp_path / "trusted")
    stranger = make_tls_files(tmp_path / "stranger")

    async def main():
        broker = await FakeBroker().start()
        front = TlsFront(broker.port, str(trusted.broker_cert), str(trusted.broker_key))
        port = await front.start()
        conn = Connection(loop, tls=TLSConfig(cafile=str(trusted.ca_cert)), auto_reconnect=True,
                          reconnect_backoff_ms=50)
        reported: list[BaseException] = []
        conn.on_error = reported.append
        try:
            assert await connect(conn, f"127.0.0.1:{port}") is None  # the trusted certificate
            front.use_certificate(str(stranger.broker_cert), str(stranger.broker_key))
            front.drop_connections()
            deadline = time.monotonic() + REFUSED_WITHIN_S
            while not any(getattr(e, "code", None) == errors.SSL for e in reported):
                assert time.monotonic() < deadline, f"the replaced certificate was not refused: {reported}"
                await asyncio.sleep(0.02)
            refusal = next(e for e in reported if e.code == errors.SSL)
            assert "certificate verify failed" in str(refusal)
            assert conn.state != "ready"
            # Back to a trusted certificate: the next reconnect is accepted again.
            front.use_certificate(str(trusted.broker_cert), str(trusted.broker_key))
            deadline = time.monotonic() + REFUSED_WITHIN_S
            while conn.state != "ready":
                assert time.monotonic() < deadline, "no reconnect once the certificate was trusted again"
                await asyncio.sleep(0.02)
        finally:
            conn.disconnect()
            await front.stop()
            await broker.stop()

    loop.run_until_complete(main())

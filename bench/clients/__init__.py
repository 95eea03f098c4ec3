"""One module per client library, each implementing the scenario kinds of ``bench.spec``.

Every module exposes ``produce``, ``roundtrip``, ``e2e`` and ``consume`` taking a ``RunSpec`` and
returning a ``RunResult`` whose ``settings`` lists the client configuration it used, so the report
shows that each client ran with its own documented high-throughput or low-latency settings.
"""

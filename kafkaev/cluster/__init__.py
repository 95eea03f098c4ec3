"""Which broker to talk to: the metadata cache (``metadata``) and the connection pool
(``pool``) that keeps one connection per broker, role and lane."""

"""Which broker to talk to: the metadata cache (``metadata``), the connection pool (``pool``)
that keeps one connection per broker, role and lane, and the coordinator links
(``coordinator``) that find a group's or a transactional id's coordinator."""

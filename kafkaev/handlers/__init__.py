"""The handler runner: ``kafkaev.Runner`` runs a function on every record of some topics, at
least once and in order, with retries, a dead-letter topic and parallelism by partition or key.

Files: ``options`` (a consumer's options and the rules they are checked against), ``retry``
(the handler retries' doubling schedule), ``offsets`` (the lowest unfinished offset of a
partition), ``scheduler`` (one consumer's lanes, slots, retries and dead letters), ``calls`` (a
handler call, a coroutine started eagerly), ``dead_letter`` (the dead-letter record and its
sending), ``stats`` (counters and health), ``membership`` (one group's client, its rebalances
and commits), ``runner`` (the facade).
"""

from .options import RunnerConfigError
from .runner import Runner
from .stats import ConsumerStats, Health

__all__ = ["ConsumerStats", "Health", "Runner", "RunnerConfigError"]

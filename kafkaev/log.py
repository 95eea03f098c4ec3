"""kafkaev's loggers, one per area, and the ``debug`` option that turns one area's DEBUG on.

The areas are children of the ``kafkaev`` logger: ``kafkaev.connection`` (connects, lost
connections at WARNING, throttling at INFO), ``kafkaev.producer`` (Produce requests),
``kafkaev.consumer`` (Fetch requests), ``kafkaev.group`` (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup; rebalances at INFO), ``kafkaev.metadata`` (refreshes) and ``kafkaev.admin``.

``debug="group,metadata"`` (librdkafka's option) sets those areas' loggers to DEBUG and
touches nothing else: not the root logger, not the ``kafkaev`` logger, not another area.
Only when no handler at all would see the records (nothing configured on the logger, its
parents or the root) does it add one, a stderr handler on the area's logger, so the records
asked for are not lost. Levels are per process, like the loggers: a later client with
``debug`` off does not turn an area off again. A log line never holds a secret: passwords,
tokens and record contents are never formatted into one (SASL user names are, as the Java
client logs them).
"""

from __future__ import annotations

import logging

AREAS = ("connection", "producer", "consumer", "group", "metadata", "admin")
ALL = "all"
ROOT_NAME = "kafkaev"
DEBUG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def logger_of(area: str) -> logging.Logger:
    """The logger of one area (``kafkaev.<area>``)."""
    return logging.getLogger(f"{ROOT_NAME}.{area}")


def parse_debug(value: object) -> tuple[str, ...]:
    """``"group,metadata"``, ``"all"``, a sequence of area names, or None -> the areas, in
    AREAS order. A name that is not an area is a ValueError naming it and the known ones."""
    if value is None:
        return ()
    if isinstance(value, str):
        names = [name.strip() for name in value.split(",") if name.strip()]
    elif isinstance(value, (list, tuple)) and all(isinstance(name, str) for name in value):
        names = [name.strip() for name in value]
    else:
        raise TypeError(f"kafkaev.Client: 'debug' must be a str such as 'group,metadata', got {type(value).__name__}")
    if ALL in names:
        return AREAS
    unknown = [name for name in names if name not in AREAS]
    if unknown:
        raise ValueError(f"kafkaev.Client: 'debug' names unknown areas {unknown}; known: {', '.join(AREAS)} or 'all'")
    return tuple(area for area in AREAS if area in names)


def enable_debug(areas: tuple[str, ...]) -> None:
    """DEBUG records for ``areas``; a stderr handler only where none would see them."""
    for area in areas:
        logger = logger_of(area)
        logger.setLevel(logging.DEBUG)
        if not logger.hasHandlers():
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter(DEBUG_FORMAT))
            logger.addHandler(handler)

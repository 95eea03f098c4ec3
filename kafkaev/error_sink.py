"""The one way kafkaev reports an error that has no callback of its own.

Two kinds of error land here: the client's own conditions that it retries or has already
reported (a ``KafkaError``, such as a broker refusing connections), and exceptions raised by
user callbacks. Both go to the ``on_error`` handler when there is one. Without one, a
``KafkaError`` is logged (as librdkafka does without an error callback) and any other exception
goes to the loop's exception handler: an exception raised by user code never vanishes, and
neither does one raised by ``on_error`` itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kafkaev.errors import KafkaError

logger = logging.getLogger("kafkaev")

ErrorHandler = Callable[[BaseException], object]


def report_error(loop: asyncio.AbstractEventLoop, handler: ErrorHandler | None, source: str,
                 exc: BaseException) -> None:
    """Hand ``exc`` to ``handler``; without one, log a ``KafkaError`` and pass anything else to
    the loop's exception handler. ``source`` names the reporter in the log and the handler's
    context. An interrupt is re-raised: it is the user's, not a callback's failure."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    if handler is not None:
        try:
            handler(exc)
        except Exception as raised:  # noqa: BLE001 - on_error's own bug is reported, not lost
            loop.call_exception_handler({"message": f"{source}: on_error raised", "exception": raised})
        return
    if isinstance(exc, KafkaError):
        logger.warning("%s: %s", source, exc)
        return
    loop.call_exception_handler({"message": f"{source}: exception in a callback", "exception": exc})


"""A process running a kafkaev.Runner, for test_handlers_crash.py to SIGKILL: every handled
record's "partition offset" is appended to the output file with one write(2) before the
handler returns, so what the kernel has is what was handled, however the process dies.
SIGTERM stops the runner the graceful way and exits 0.

    python tests/handlers_crash_worker.py BOOTSTRAP TOPIC GROUP OUTPUT
"""

from __future__ import annotations

import os
import signal
import sys

import kafkaev


def main() -> None:
    bootstrap, topic, group, output = sys.argv[1:5]
    fd = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def handle(msg: kafkaev.Message) -> None:
        os.write(fd, b"%d %d\n" % (msg.partition, msg.offset))

    # Static membership: a restarted worker takes the killed one's place at once, instead of
    # the group waiting out the dead member's session.
    runner = kafkaev.Runner(bootstrap, group_instance_id="crash-worker", session_timeout_ms=10000,
                            heartbeat_interval_ms=1000, rebalance_timeout_ms=20000)
    runner.consumer("crash", [topic], handle, group_id=group)
    loop = kafkaev.runner.default_loop()
    loop.add_signal_handler(signal.SIGTERM, lambda: runner.stop(lambda _err: kafkaev.stop()))
    runner.start()
    print("started", flush=True)
    kafkaev.run()
    os.close(fd)


if __name__ == "__main__":
    main()

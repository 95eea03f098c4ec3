"""``python -m kafkaev`` / ``kafkaev``: the command line (produce, consume, topics, groups, perf, broker)."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from kafkaev.cli.common import CliError

COMMANDS = ("produce", "consume", "topics", "groups", "perf", "broker")


class _Parser(argparse.ArgumentParser):
    """Usage mistakes: one line on stderr and exit status 2, no usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkaev", description="kafkaev: a fast Apache Kafka client, on the command line")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log the client's retried conditions (broker connection failures) to stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                       parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"kafkaev.cli.{name}").add_parser(subparsers)
    return parser


def _configure_logging(verbose: bool) -> None:
    # The client logs conditions it retries on its own (a broker refusing connections); the
    # command line reports only the final outcome as one line, unless asked for the details.
    logger = logging.getLogger("kafkaev")
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    else:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging(args.verbose)
    module = importlib.import_module(f"kafkaev.cli.{args.command}")
    try:
        return module.run(args)
    except CliError as exc:
        print(f"kafkaev {args.command}: {exc}", file=sys.stderr)
        return 1
    except (TypeError, ValueError) as exc:  # option validation in Client/Admin names the argument
        print(f"kafkaev {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kafkaev consume ... | head`
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m kafkaev`` / ``kafkaev``: the command line (produce, consume, topics, metadata, groups, configs, acls, perf, broker)."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from kafkaev.cli.common import EXIT_ERROR, EXIT_USAGE, CliError, UsageError

COMMANDS = ("produce", "consume", "topics", "metadata", "groups", "configs", "acls", "perf", "broker")
DISTRIBUTION = "kafkaev"
# kcat's -L: `kafkaev -L ...` is `kafkaev metadata ...` (rewritten before parsing, so that the
# metadata command's own options follow it as they follow kcat -L).
LIST_FLAG = "-L"
LIST_COMMAND = "metadata"


class _Parser(argparse.ArgumentParser):
    """Usage mistakes: one line on stderr and exit status 2, no usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def version() -> str:
    """The installed distribution's version; the package's own constant when it is not installed
    (run from a checkout through PYTHONPATH)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:
        from kafkaev import __version__

        return __version__


def _expand_list_flag(argv: list[str]) -> list[str]:
    """``-L`` among the top-level options (before any command) becomes the metadata command."""
    for i, arg in enumerate(argv):
        if arg == LIST_FLAG:
            return [*argv[:i], LIST_COMMAND, *argv[i + 1:]]
        if not arg.startswith("-"):
            break  # a command: -L after it is that command's business
    return argv


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkaev", description="kafkaev: a fast Apache Kafka client, on the command line")
    parser.add_argument("--version", action="version", version=f"kafkaev {version()}")
    # Never seen by argparse (rewritten first); declared so that --help lists it.
    parser.add_argument(LIST_FLAG, dest="list_metadata", action="store_true",
                        help=f"the same as the '{LIST_COMMAND}' command (kcat -L)")
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
    parser = build_parser()
    args, extra = parser.parse_known_args(_expand_list_flag(sys.argv[1:] if argv is None else argv))
    module = importlib.import_module(f"kafkaev.cli.{args.command}")
    # argparse gives a trailing nargs="*" positional only the words before the first option, so
    # `produce t -p 0 a.bin` would reject a.bin; a command naming such a positional takes the rest.
    trailing = getattr(module, "TRAILING_POSITIONAL", None)
    if extra and trailing and not any(word.startswith("-") for word in extra):
        setattr(args, trailing, [*getattr(args, trailing), *extra])
        extra = []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    _configure_logging(args.verbose)
    try:
        return module.run(args)
    except UsageError as exc:
        print(f"kafkaev {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CliError as exc:
        print(f"kafkaev {args.command}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (TypeError, ValueError) as exc:  # option validation in Client/Admin (-X) names the argument
        print(f"kafkaev {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `kafkaev consume ... | head`
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

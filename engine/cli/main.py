"""`brim`: the desktop app with no arguments; `probe`, `chat --headless` and `conversations`
are the stable headless surface that scripts, tests and benchmarks use."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from engine.cli.arguments import data_dir_of, existing_folder, folder
from engine.cli.chat import OpenWindow, add_chat_parser, cmd_chat
from engine.cli.conversations import add_conversations_parser, cmd_conversations
from engine.cli.errors import EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED, EXIT_USAGE, CliError
from engine.cli.fit import add_fit_parser, cmd_fit
from engine.cli.memory import add_memory_parser, cmd_memory
from engine.cli.probe import add_probe_parser, cmd_probe
from engine.cli.stdio import reopen_closed_streams, silence_stdout
from engine.config import AgentConfigError
from engine.memory.plaintext import visible
from engine.paths import BrimPaths
from engine.store.errors import StoreError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brim", description=__doc__)
    parser.add_argument(
        "--data-dir", type=folder, metavar="DIR", help="keep every Brim file under DIR"
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        dest="window_workspace",
        help="the window's folder for new conversations (the agent's tools work inside it)",
    )
    sub = parser.add_subparsers(dest="command")
    add_probe_parser(sub)
    add_chat_parser(sub)
    add_conversations_parser(sub)
    add_memory_parser(sub)
    add_fit_parser(sub)
    return parser


def _no_window(argv: list[str]) -> int:
    raise CliError(
        "the window is started by the `brim` launcher (python -m launcher); this entry point "
        "runs the headless commands only (add --headless to chat)"
    )


class _OneLineFormatter(logging.Formatter):
    """Scripts read stderr line by line: a best-effort step that failed and logged its
    exception (the memory extractor, a listener) is one line naming the exception, not a
    traceback that reads like a crash."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = f"{message}: {type(exc).__name__}: {exc}"
        return f"brim: {visible(message)}"  # an engine's words may be in it: shown, not obeyed


def _dispatch(
    args: argparse.Namespace, paths: BrimPaths, data_dir: Path | None, open_window: OpenWindow
) -> int | None:
    if args.command is None:
        argv = ["--data-dir", str(data_dir)] if data_dir else []
        if args.window_workspace is not None:
            argv += ["--workspace", str(existing_folder(args.window_workspace))]
        return open_window(argv)
    if args.command == "probe":
        return cmd_probe(args, paths)
    if args.command == "chat":
        return cmd_chat(args, paths, open_window)
    if args.command == "conversations":
        return cmd_conversations(args, paths)
    if args.command == "memory":
        return cmd_memory(args, paths)
    if args.command == "fit":
        return cmd_fit(args)
    return None


def main(argv: list[str] | None = None, open_window: OpenWindow | None = None) -> int:
    """The `brim` command line. `open_window` starts the desktop (the launcher above both
    rooms passes it, so nothing under engine/ imports the desktop); without it, the
    commands that would open the window are a usage error."""
    reopen_closed_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    data_dir = data_dir_of(args)
    paths = BrimPaths.resolve(data_dir)
    try:
        if data_dir is not None and data_dir.exists() and not data_dir.is_dir():
            raise CliError(f"--data-dir {data_dir} is a file, not a folder")
        code = _dispatch(args, paths, data_dir, open_window or _no_window)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at interpreter exit
        if code is not None:
            return code
    except (CliError, AgentConfigError) as exc:
        print(f"brim: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:
        # A damaged, locked or newer database: one line saying what happened and where the
        # original is (a damaged one was moved aside, never deleted).
        print(f"brim: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        silence_stdout()  # `brim … | head -1`: the reader has all it wanted
        return EXIT_OUTPUT_CLOSED
    except OSError as exc:
        # A folder Brim cannot create or write (a file in the way, no permission, disk full)
        print(f"brim: {exc}", file=sys.stderr)
        return 1
    parser.print_help()
    return EXIT_USAGE

"""The argument types and flags several commands share: folders, conversation ids, and the
engine flags that build or adjust the agent a command runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.errors import CliError
from engine.config import FIELDS_BY_NAME, FieldProblem
from engine.providers.base import PROVIDER_KINDS


def folder(value: str) -> Path:
    """An empty `--data-dir ""` (an unset shell variable) would mean the current folder."""
    if not value.strip():
        raise argparse.ArgumentTypeError("is empty; give the folder Brim should keep its files in")
    return Path(value)


def conversation_id(value: str) -> str:
    """Bytes that are not UTF-8 (arrive as lone surrogates) can name no conversation, and
    SQLite refuses to even look them up."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{value!a} is not UTF-8 text") from None
    return value


def add_data_dir_flag(parser: argparse.ArgumentParser) -> None:
    """`--data-dir` is accepted after any subcommand too, as scripts write it both ways."""
    parser.add_argument(
        "--data-dir",
        type=folder,
        dest="local_data_dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="keep every Brim file under DIR",
    )


def seconds(value: str) -> float:
    """`--request-timeout`: the agent setting's own range and wording (engine/config/schema)."""
    try:
        parsed = FIELDS_BY_NAME["request_timeout_s"].parse_text(value)
    except FieldProblem as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if parsed is None:
        raise argparse.ArgumentTypeError("is empty; give the seconds to wait, e.g. 60")
    return float(parsed)


def add_engine_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", choices=PROVIDER_KINDS)
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--num-ctx", type=int)
    parser.add_argument("--max-context-tokens", type=int)
    parser.add_argument(
        "--request-timeout",
        type=seconds,
        metavar="SECONDS",
        help="how long to wait for the engine's next bytes before calling it hung (default 600)",
    )
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable holding the engine's API key (the key itself is "
        "never taken on the command line)",
    )


def existing_folder(workspace: Path) -> Path:
    if not workspace.is_dir():
        what = "is not a folder" if workspace.exists() else "does not exist"
        raise CliError(f"--workspace {workspace} {what}")
    return workspace


def data_dir_of(args: argparse.Namespace) -> Path | None:
    """The data folder, given before the command (`--data-dir`) or after it."""
    local: Path | None = getattr(args, "local_data_dir", None)
    return local or args.data_dir

"""`brim`: the desktop app with no arguments; `probe`, `chat --headless` and `conversations`
are the stable headless surface that scripts, tests and benchmarks use."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import (
    FIELDS_BY_NAME,
    AgentConfig,
    AgentConfigError,
    DuplicateAgentName,
    FieldProblem,
    default_agent,
    load_agents,
)
from engine.events import ErrorEvent, Event, NoticeEvent, TurnEndEvent, ViewRequestEvent
from engine.paths import BrimPaths
from engine.providers.base import PROVIDER_KINDS
from engine.providers.engine_text import clean
from engine.providers.errors import ProviderError
from engine.store.errors import StoreError

EXIT_UNREACHABLE = 2
EXIT_USAGE = 64
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl+C
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE: whoever read stdout went away (`| head -1`)
_READ_CHUNK = 1 << 16  # bytes per read of stdin


def _folder(value: str) -> Path:
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


def _data_dir_flag(parser: argparse.ArgumentParser) -> None:
    """`--data-dir` is accepted after any subcommand too, as scripts write it both ways."""
    parser.add_argument(
        "--data-dir",
        type=_folder,
        dest="local_data_dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="keep every Brim file under DIR",
    )


def _seconds(value: str) -> float:
    """`--request-timeout`: the agent setting's own range and wording (engine/config/schema)."""
    try:
        seconds = FIELDS_BY_NAME["request_timeout_s"].parse_text(value)
    except FieldProblem as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds is None:
        raise argparse.ArgumentTypeError("is empty; give the seconds to wait, e.g. 60")
    return float(seconds)


def _add_engine_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", choices=PROVIDER_KINDS)
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--num-ctx", type=int)
    parser.add_argument("--max-context-tokens", type=int)
    parser.add_argument(
        "--request-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long to wait for the engine's next bytes before calling it hung (default 600)",
    )
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable holding the engine's API key (the key itself is "
        "never taken on the command line)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brim", description=__doc__)
    parser.add_argument(
        "--data-dir", type=_folder, metavar="DIR", help="keep every Brim file under DIR"
    )
    parser.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        dest="window_workspace",
        help="the window's folder for new conversations (the agent's tools work inside it)",
    )
    sub = parser.add_subparsers(dest="command")

    probe = sub.add_parser("probe", help="ask an engine what window it really serves")
    probe.add_argument("--agent", help="probe the engine this agent names")
    _add_engine_flags(probe)
    _data_dir_flag(probe)
    probe.add_argument("--json", action="store_true", help="print one JSON object")

    chat = sub.add_parser("chat", help="chat with an agent")
    chat.add_argument("--headless", action="store_true", help="JSON Lines on stdout")
    chat.add_argument("--agent")
    _add_engine_flags(chat)
    _data_dir_flag(chat)
    chat.add_argument("--workspace", type=Path)
    chat.add_argument("--conversation", type=conversation_id)
    chat.add_argument("--max-tokens", type=int)
    chat.add_argument(
        "--approve",
        choices=("deny", "auto"),
        default="deny",
        help="what write_file, edit_file and run_command get without a person (default deny)",
    )
    chat.add_argument("--ephemeral", action="store_true", help="write no memory or journal")
    chat.add_argument("--no-memory", action="store_true", help="no memory at all (not even read)")
    chat.add_argument(
        "--reflect-on-close",
        action="store_true",
        help="on close, start a detached `brim memory reflect` (what the desktop does)",
    )

    conv = sub.add_parser("conversations", help="list or export saved conversations")
    conv_sub = conv.add_subparsers(dest="conv_command", required=True)
    conv_list = conv_sub.add_parser("list")
    conv_list.add_argument("--json", action="store_true")
    _data_dir_flag(conv_list)
    conv_export = conv_sub.add_parser("export")
    conv_export.add_argument("id", type=conversation_id)
    conv_export.add_argument("--json", action="store_true")
    _data_dir_flag(conv_export)

    from engine.memory.cli import add_memory_parser

    add_memory_parser(sub, _add_engine_flags, _data_dir_flag)
    return parser


def agent_from_flags(args: argparse.Namespace, paths: BrimPaths) -> AgentConfig:
    """The agent a command runs: `--agent NAME`, else one built from engine flags, else the
    default agent. Engine flags on top of `--agent` override its fields."""
    if getattr(args, "agent", None):
        agents, errors = load_agents(paths.agents_dir)
        _refuse_ambiguous(args.agent, agents, errors)
        for agent in agents:
            if agent.name == args.agent:
                base = agent
                break
        else:
            problems = "".join(f"\n  {e}" for e in errors)
            raise CliError(f"no agent named {args.agent!r} in {paths.agents_dir}{problems}")
    elif args.provider:
        base = default_agent().model_copy(
            update={"name": f"{args.provider}-adhoc", "provider": args.provider, "model": ""}
        )
        base = base.model_copy(update={"base_url": None})
    else:
        base = default_agent()
    updates: dict[str, Any] = {}
    for flag, field in (
        ("provider", "provider"),
        ("base_url", "base_url"),
        ("model", "model"),
        ("num_ctx", "num_ctx"),
        ("max_context_tokens", "max_context_tokens"),
        ("max_tokens", "max_tokens"),
        ("request_timeout", "request_timeout_s"),
        ("api_key_env", "api_key_env"),
    ):
        value = getattr(args, flag, None)
        if value is not None:
            updates[field] = value
    if updates.get("api_key_env") and base.api_key is not None:
        updates["api_key"] = None  # the flag names where the key is; it replaces the file's
    return base.model_copy(update=updates) if updates else base


def _refuse_ambiguous(name: str, agents: list[AgentConfig], errors: list[AgentConfigError]) -> None:
    """Two agent files named `name`: running the first by file name would be a silent
    guess at which one the user meant, so the command stops and names every file."""
    same = [e.path for e in errors if isinstance(e, DuplicateAgentName) and e.name == name]
    if not same:
        return
    first = next((a.source_path for a in agents if a.name == name), None)
    files = [str(p) for p in (first, *same) if p is not None]
    raise CliError(
        f"{len(files)} agent files are named {name!r}: {' and '.join(files)}; "
        "rename one (its `name` key) so --agent can tell them apart"
    )


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 64."""


# -- probe -------------------------------------------------------------------------------


async def _probe(agent: AgentConfig) -> dict[str, Any]:
    from engine.config.credentials import agent_api_key
    from engine.session import probe_window, provider_for

    provider = provider_for(agent)
    told = False

    def on_wait(waited_s: float, limit_s: float) -> None:
        nonlocal told
        if not told:  # once: stdout stays the one JSON answer
            told = True
            print(
                f"brim probe: the engine is loading its model; waiting (up to {limit_s:.0f} s)",
                file=sys.stderr,
            )

    try:
        resolution = await probe_window(provider, agent, on_wait)
    finally:
        await provider.aclose()
    result = resolution.to_probe_json()
    route = getattr(provider, "route", None)
    if route is not None:  # the engines reached over HTTP: which way, and with what key
        result["route"] = route.to_json()
        result["route_text"] = route.describe()
        result["api_key"] = agent_api_key(agent).describe()
    return result


def cmd_probe(args: argparse.Namespace, paths: BrimPaths) -> int:
    agent = agent_from_flags(args, paths)
    try:
        result = asyncio.run(_probe(agent))
    except ProviderError as exc:
        print(f"brim probe: {exc.message}", file=sys.stderr)
        return EXIT_UNREACHABLE if exc.kind == "unreachable" else 1
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['provider']} {result['model']}: window {result['window']:,} "
            f"({result['source']})"
        )
        if "route" in result:
            print(f"  route: {result['route_text']}")
            print(f"  api key: {result['api_key']}")
        for warning in result["warnings"]:
            print(f"  warning: {warning}")
    return 0


# -- chat --headless ---------------------------------------------------------------------


class _HeadlessOutput:
    """stdout as JSON Lines. When its reader goes away (`brim chat --headless | head -3`),
    the chat must stop rather than keep the engine generating for nobody: `closed` turns
    true and `on_close` runs once (it cancels the turn; the partial answer is kept)."""

    def __init__(self) -> None:
        self.closed = False
        self.on_close: Callable[[], None] | None = None
        # The error the chat last ended on (the engine could not be reached, the model is
        # not there, ...); a later turn that finishes clears it. A script reads it as exit 1.
        self.failure: ErrorEvent | None = None

    def write(self, event: Event) -> None:
        if isinstance(event, ErrorEvent):
            self.failure = event
        elif isinstance(event, TurnEndEvent):
            self.failure = None
        if self.closed or isinstance(event, ViewRequestEvent):  # its notice says it in words
            return
        data = event.to_dict()
        try:
            try:
                # A lone surrogate (text no engine should send, from wherever it came)
                # becomes U+FFFD, so encoding the line cannot fail on it.
                sys.stdout.write(clean(json.dumps(data, ensure_ascii=False)) + "\n")
            except UnicodeEncodeError:  # a stdout that is not UTF-8: escaped JSON is ASCII
                sys.stdout.write(json.dumps(data, ensure_ascii=True) + "\n")
            sys.stdout.flush()
        except UnicodeEncodeError:  # not a closed stdout: the line is lost, the chat goes on
            logging.getLogger(__name__).warning("an event could not be written to stdout")
        except (BrokenPipeError, ValueError):  # ValueError: the stream itself was closed
            self.closed = True
            _silence_stdout()
            if self.on_close is not None:
                self.on_close()


def _silence_stdout() -> None:
    """Point stdout at the null device, so that what is still buffered, flushed at exit,
    does not end the run with 'Exception ignored … BrokenPipeError'."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@dataclass(frozen=True)
class _InputLine:
    text: str
    replaced: bool  # the bytes were not UTF-8: undecodable ones became U+FFFD


def _decode_line(raw: bytes) -> _InputLine:
    """One line of stdin. Bytes that are not UTF-8 would otherwise reach the engine as lone
    surrogates that no JSON encoder accepts, killing the whole run on the first request."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    try:
        return _InputLine(raw.decode("utf-8"), False)
    except UnicodeDecodeError:
        return _InputLine(raw.decode("utf-8", errors="replace"), True)


async def _read_lines(queue: asyncio.Queue[_InputLine | None]) -> None:
    """Feed stdin's lines to `queue` from a thread, then None at the end of input.

    The thread reads the descriptor with `os.read`, never through `sys.stdin.buffer`: a
    thread blocked inside that buffered reader holds its lock, and when a signal ends the
    chat while stdin is still open, the interpreter's shutdown tries to take the same lock
    and aborts the process (`Fatal Python error: _enter_buffered_busy`, SIGABRT) instead
    of exiting 143 or 130. A bare descriptor read holds no lock that shutdown needs."""
    loop = asyncio.get_running_loop()
    fd = _stdin_fd()

    def put(line: _InputLine | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, line)
            return True
        except RuntimeError:  # the chat already ended (a signal) and its loop is closed
            return False

    def pump() -> None:
        pending = bytearray()
        try:
            while fd is not None and (chunk := os.read(fd, _READ_CHUNK)):
                pending += chunk
                if b"\n" not in chunk:
                    continue
                *lines, rest = bytes(pending).split(b"\n")
                pending = bytearray(rest)
                for raw in lines:
                    if not put(_decode_line(raw + b"\n")):
                        return
            if pending:
                put(_decode_line(bytes(pending)))
        except (OSError, ValueError):
            pass  # stdin went away: that is the end of input, like EOF
        finally:  # whatever happened, the chat must learn that input ended
            put(None)

    threading.Thread(target=pump, name="brim-stdin", daemon=True).start()


def _stdin_fd() -> int | None:
    """stdin's descriptor; None when stdin is not backed by one (then there is no input)."""
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None


async def _headless(agent: AgentConfig, paths: BrimPaths, args: argparse.Namespace) -> int:
    from engine.conversation_claim import ConversationBusy
    from engine.session import ChatSession, UnknownConversation
    from engine.tools import AutoApprove, DenyAll

    output = _HeadlessOutput()
    session = ChatSession(
        agent,
        paths,
        output.write,
        conversation_id=args.conversation,
        workspace=args.workspace,
        ephemeral=args.ephemeral,
        approver=AutoApprove() if args.approve == "auto" else DenyAll(),
        memory=not args.no_memory,
        reflect_on_close=args.reflect_on_close,
    )
    queue: asyncio.Queue[_InputLine | None] = asyncio.Queue()

    def reader_gone() -> None:
        session.cancel()
        queue.put_nowait(None)

    output.on_close = reader_gone
    stopped_by = _cancel_on_signals()
    try:
        try:
            await session.start()
        except UnknownConversation as exc:
            output.write(ErrorEvent("unknown_conversation", str(exc)))
            print(f"brim: {exc}", file=sys.stderr)
            return 1
        except ConversationBusy as exc:
            output.write(ErrorEvent("conversation_busy", str(exc)))
            print(f"brim: {exc}", file=sys.stderr)
            return 1
        await _read_lines(queue)
        try:
            while not output.closed and (line := await queue.get()) is not None:
                if output.closed:
                    break
                if line.replaced:
                    output.write(
                        NoticeEvent(
                            "warning",
                            "That line was not valid UTF-8; the bytes that could not be read "
                            "were replaced with \ufffd.",
                        )
                    )
                if not line.text.strip():
                    continue
                await session.send(line.text)
                if stopped_by() is not None:
                    break  # the signal landed where the turn absorbed its cancellation
        finally:
            await session.close()
    except asyncio.CancelledError:
        if stopped_by() is None:
            raise
    code = stopped_by()
    if code is not None:
        return code
    if output.closed:
        return EXIT_OUTPUT_CLOSED
    if output.failure is not None:
        print(f"brim: {output.failure.message}", file=sys.stderr)
        return EXIT_UNREACHABLE if output.failure.kind == "unreachable" else 1
    return 0


def _cancel_on_signals() -> Callable[[], int | None]:
    """Ctrl+C (SIGINT) and SIGTERM (`timeout`, a service manager, the desktop quitting) end a
    headless chat the same way: the turn is cancelled and its partial answer saved, then the
    process exits 130 or 143. Returns the exit code of the signal that arrived, or None.

    Brim's own handler, not asyncio.run's: a cancellation that lands while the turn is
    finishing can be absorbed by it, and the signal must still end the chat."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    seen: list[int] = []

    def on_signal(code: int) -> None:
        if not seen:
            seen.append(code)
        if task is not None:
            task.cancel()

    for sig, code in ((signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGTERM, EXIT_TERMINATED)):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, code)
    return lambda: seen[0] if seen else None


OpenWindow = Callable[[list[str]], int]


def _no_window(argv: list[str]) -> int:
    raise CliError(
        "the window is started by the `brim` launcher (python -m launcher); this entry point "
        "runs the headless commands only (add --headless to chat)"
    )


def cmd_chat(args: argparse.Namespace, paths: BrimPaths, open_window: OpenWindow) -> int:
    if not args.headless:
        return open_window(_desktop_argv(args))
    if args.workspace is not None:
        _existing_folder(args.workspace)
    agent = agent_from_flags(args, paths)
    return asyncio.run(_headless(agent, paths, args))


def _existing_folder(workspace: Path) -> Path:
    if not workspace.is_dir():
        what = "is not a folder" if workspace.exists() else "does not exist"
        raise CliError(f"--workspace {workspace} {what}")
    return workspace


def _desktop_argv(args: argparse.Namespace) -> list[str]:
    data_dir = _data_dir(args)
    argv = ["--data-dir", str(data_dir)] if data_dir else []
    if getattr(args, "workspace", None):
        argv += ["--workspace", str(args.workspace)]  # the folder new conversations work in
    return argv


# -- conversations -----------------------------------------------------------------------


def cmd_conversations(args: argparse.Namespace, paths: BrimPaths) -> int:
    from engine.store import Store

    store = Store.open(paths.ensure().db_path)
    try:
        if args.conv_command == "list":
            rows = [
                {
                    "id": c.id,
                    "title": c.title,
                    "agent": c.agent,
                    "updated": c.updated,
                    "messages": c.message_count,
                }
                for c in store.list_conversations()
            ]
            if args.json:
                print(json.dumps(rows))
            else:
                for row in rows:
                    print(
                        f"{row['id']}  {row['agent']:<16} {row['messages']:>4} msgs  {row['title']}"
                    )
            return 0
        info = store.get_conversation(args.id)
        if info is None:
            raise CliError(f"no conversation with id {args.id!r}")
        messages = [m.to_dict() for m in store.messages(args.id, include_archived=True)]
        payload = {"id": info.id, "title": info.title, "agent": info.agent, "messages": messages}
        print(json.dumps(payload, ensure_ascii=False, indent=None if args.json else 2))
        return 0
    finally:
        store.close()


# -- entry point -------------------------------------------------------------------------


def _data_dir(args: argparse.Namespace) -> Path | None:
    local: Path | None = getattr(args, "local_data_dir", None)
    return local or args.data_dir


class _OneLineFormatter(logging.Formatter):
    """Scripts read stderr line by line: a best-effort step that failed and logged its
    exception (the memory extractor, a listener) is one line naming the exception, not a
    traceback that reads like a crash."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message = f"{message}: {type(exc).__name__}: {exc}"
        return f"brim: {message}"


def _dispatch(
    args: argparse.Namespace, paths: BrimPaths, data_dir: Path | None, open_window: OpenWindow
) -> int | None:
    if args.command is None:
        argv = ["--data-dir", str(data_dir)] if data_dir else []
        if args.window_workspace is not None:
            argv += ["--workspace", str(_existing_folder(args.window_workspace))]
        return open_window(argv)
    if args.command == "probe":
        return cmd_probe(args, paths)
    if args.command == "chat":
        return cmd_chat(args, paths, open_window)
    if args.command == "conversations":
        return cmd_conversations(args, paths)
    if args.command == "memory":
        from engine.memory.cli import cmd_memory

        return cmd_memory(args, paths)
    return None


def _reopen_closed_streams() -> None:
    """A stream the shell closed (`brim … >&-`, `<&-`) is None in Python: treat it as the
    null device, as if the user had written `> /dev/null`, instead of failing on it."""
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the run
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115


def main(argv: list[str] | None = None, open_window: OpenWindow | None = None) -> int:
    """The `brim` command line. `open_window` starts the desktop (the launcher above both
    rooms passes it, so nothing under engine/ imports the desktop); without it, the
    commands that would open the window are a usage error."""
    _reopen_closed_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineFormatter())
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    data_dir = _data_dir(args)
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
        _silence_stdout()  # `brim … | head -1`: the reader has all it wanted
        return EXIT_OUTPUT_CLOSED
    except OSError as exc:
        # A folder Brim cannot create or write (a file in the way, no permission, disk full)
        print(f"brim: {exc}", file=sys.stderr)
        return 1
    parser.print_help()
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

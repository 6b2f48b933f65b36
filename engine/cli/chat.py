"""`brim chat`: the window, or with `--headless` a chat over stdin and JSON Lines on stdout
that ends cleanly on end of input, a closed reader, Ctrl+C or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.cli.agents import agent_from_flags
from engine.cli.arguments import (
    add_data_dir_flag,
    add_engine_flags,
    conversation_id,
    data_dir_of,
    existing_folder,
)
from engine.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_OUTPUT_CLOSED,
    EXIT_TERMINATED,
    EXIT_UNREACHABLE,
)
from engine.cli.stdio import HeadlessOutput, InputLine, read_lines
from engine.cli.terminal import say
from engine.config import AgentConfig
from engine.config.credentials import agent_api_key
from engine.conversation_claim import ConversationBusy
from engine.events import ErrorEvent, NoticeEvent
from engine.paths import BrimPaths
from engine.session import ChatSession, UnknownConversation
from engine.tools import AutoApprove, DenyAll

# Starts the desktop with its own flags (--data-dir, --workspace); the launcher passes it.
OpenWindow = Callable[[list[str]], int]


def add_chat_parser(sub: Any) -> None:
    chat = sub.add_parser("chat", help="chat with an agent")
    chat.add_argument("--headless", action="store_true", help="JSON Lines on stdout")
    chat.add_argument("--agent")
    add_engine_flags(chat)
    add_data_dir_flag(chat)
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


def cmd_chat(args: argparse.Namespace, paths: BrimPaths, open_window: OpenWindow) -> int:
    if not args.headless:
        return open_window(_desktop_argv(args))
    if args.workspace is not None:
        existing_folder(args.workspace)
    agent = agent_from_flags(args, paths)
    return asyncio.run(_headless(agent, paths, args))


def _desktop_argv(args: argparse.Namespace) -> list[str]:
    data_dir = data_dir_of(args)
    argv = ["--data-dir", str(data_dir)] if data_dir else []
    if getattr(args, "workspace", None):
        argv += ["--workspace", str(args.workspace)]  # the folder new conversations work in
    return argv


async def _headless(agent: AgentConfig, paths: BrimPaths, args: argparse.Namespace) -> int:
    keys = [agent_api_key(agent).value or ""]
    output = HeadlessOutput(keys)
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
        compact_ahead=True,
    )
    queue: asyncio.Queue[InputLine | None] = asyncio.Queue()

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
            say(f"brim: {exc}", keys)
            return 1
        except ConversationBusy as exc:
            output.write(ErrorEvent("conversation_busy", str(exc)))
            say(f"brim: {exc}", keys)
            return 1
        await read_lines(queue)
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
            await session.conversation.last_requests.settle()  # a `/context show` rendering
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
        say(f"brim: {output.failure.message}", keys)  # the engine's words, shown safely
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

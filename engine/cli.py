"""`brim`: the desktop app with no arguments; `probe`, `chat --headless` and `conversations`
are the stable headless surface that scripts, tests and benchmarks use."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import threading
from pathlib import Path
from typing import Any

from engine.config import AgentConfig, AgentConfigError, default_agent, load_agents
from engine.events import ErrorEvent, Event
from engine.paths import BrimPaths
from engine.providers.base import PROVIDER_KINDS
from engine.providers.errors import ProviderError
from engine.store.errors import StoreError

EXIT_UNREACHABLE = 2
EXIT_USAGE = 64


def _add_engine_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", choices=PROVIDER_KINDS)
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--num-ctx", type=int)
    parser.add_argument("--max-context-tokens", type=int)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="brim", description=__doc__)
    parser.add_argument("--data-dir", type=Path, help="keep every Brim file under DIR")
    sub = parser.add_subparsers(dest="command")

    probe = sub.add_parser("probe", help="ask an engine what window it really serves")
    _add_engine_flags(probe)
    probe.add_argument("--json", action="store_true", help="print one JSON object")

    chat = sub.add_parser("chat", help="chat with an agent")
    chat.add_argument("--headless", action="store_true", help="JSON Lines on stdout")
    chat.add_argument("--agent")
    _add_engine_flags(chat)
    chat.add_argument("--data-dir", type=Path, dest="chat_data_dir")
    chat.add_argument("--workspace", type=Path)
    chat.add_argument("--conversation")
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
    conv_export = conv_sub.add_parser("export")
    conv_export.add_argument("id")
    conv_export.add_argument("--json", action="store_true")

    from engine.memory.cli import add_memory_parser

    add_memory_parser(sub, _add_engine_flags)
    return parser


def agent_from_flags(args: argparse.Namespace, paths: BrimPaths) -> AgentConfig:
    """The agent a command runs: `--agent NAME`, else one built from engine flags, else the
    default agent. Engine flags on top of `--agent` override its fields."""
    if getattr(args, "agent", None):
        agents, errors = load_agents(paths.agents_dir)
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
    ):
        value = getattr(args, flag, None)
        if value is not None:
            updates[field] = value
    return base.model_copy(update=updates) if updates else base


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 64."""


# -- probe -------------------------------------------------------------------------------


async def _probe(agent: AgentConfig) -> dict[str, Any]:
    from engine.session import probe_window, provider_for

    provider = provider_for(agent)
    try:
        resolution = await probe_window(provider, agent)
    finally:
        await provider.aclose()
    return resolution.to_probe_json()


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
        for warning in result["warnings"]:
            print(f"  warning: {warning}")
    return 0


# -- chat --headless ---------------------------------------------------------------------


def _write_event(event: Event) -> None:
    sys.stdout.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
    sys.stdout.flush()


async def _read_lines(queue: asyncio.Queue[str | None]) -> None:
    loop = asyncio.get_running_loop()

    def pump() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="brim-stdin", daemon=True).start()


async def _headless(agent: AgentConfig, paths: BrimPaths, args: argparse.Namespace) -> int:
    from engine.session import ChatSession, UnknownConversation
    from engine.tools import AutoApprove, DenyAll

    session = ChatSession(
        agent,
        paths,
        _write_event,
        conversation_id=args.conversation,
        workspace=args.workspace,
        ephemeral=args.ephemeral,
        approver=AutoApprove() if args.approve == "auto" else DenyAll(),
        memory=not args.no_memory,
        reflect_on_close=args.reflect_on_close,
    )
    try:
        await session.start()
    except UnknownConversation as exc:
        _write_event(ErrorEvent("unknown_conversation", str(exc)))
        return 1
    queue: asyncio.Queue[str | None] = asyncio.Queue()
    await _read_lines(queue)
    try:
        while (line := await queue.get()) is not None:
            if not line.strip():
                continue
            await session.send(line)
    finally:
        await session.close()
    return 0


def cmd_chat(args: argparse.Namespace, paths: BrimPaths) -> int:
    if not args.headless:
        from desktop.app import main as desktop_main

        return desktop_main(_desktop_argv(args))
    agent = agent_from_flags(args, paths)
    return asyncio.run(_headless(agent, paths, args))


def _desktop_argv(args: argparse.Namespace) -> list[str]:
    data_dir = getattr(args, "chat_data_dir", None) or args.data_dir
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="brim: %(message)s")
    data_dir = getattr(args, "chat_data_dir", None) or args.data_dir
    paths = BrimPaths.resolve(data_dir)
    try:
        if args.command is None:
            from desktop.app import main as desktop_main

            return desktop_main(["--data-dir", str(data_dir)] if data_dir else [])
        if args.command == "probe":
            return cmd_probe(args, paths)
        if args.command == "chat":
            return cmd_chat(args, paths)
        if args.command == "conversations":
            return cmd_conversations(args, paths)
        if args.command == "memory":
            from engine.memory.cli import cmd_memory

            return cmd_memory(args, paths)
    except (CliError, AgentConfigError) as exc:
        print(f"brim: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:
        # A damaged, locked or newer database: one line saying what happened and where the
        # original is (a damaged one was moved aside, never deleted).
        print(f"brim: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    parser.print_help()
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())

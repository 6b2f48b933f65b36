"""`brim conversations list|export`: the saved conversations, as text or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from engine.cli.arguments import add_data_dir_flag, conversation_id
from engine.cli.errors import CliError
from engine.paths import BrimPaths
from engine.store import Store


def add_conversations_parser(sub: Any) -> None:
    conv = sub.add_parser("conversations", help="list or export saved conversations")
    conv_sub = conv.add_subparsers(dest="conv_command", required=True)
    conv_list = conv_sub.add_parser("list")
    conv_list.add_argument("--json", action="store_true")
    add_data_dir_flag(conv_list)
    conv_export = conv_sub.add_parser("export")
    conv_export.add_argument("id", type=conversation_id)
    conv_export.add_argument("--json", action="store_true")
    add_data_dir_flag(conv_export)


def cmd_conversations(args: argparse.Namespace, paths: BrimPaths) -> int:
    store = Store.open(paths.ensure().db_path)
    try:
        if args.conv_command == "list":
            return _list(store, args)
        return _export(store, args)
    finally:
        store.close()


def _list(store: Store, args: argparse.Namespace) -> int:
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
            print(f"{row['id']}  {row['agent']:<16} {row['messages']:>4} msgs  {row['title']}")
    return 0


def _export(store: Store, args: argparse.Namespace) -> int:
    info = store.get_conversation(args.id)
    if info is None:
        raise CliError(f"no conversation with id {args.id!r}")
    messages = [m.to_dict() for m in store.messages(args.id, include_archived=True)]
    payload = {"id": info.id, "title": info.title, "agent": info.agent, "messages": messages}
    print(json.dumps(payload, ensure_ascii=False, indent=None if args.json else 2))
    return 0

"""`brim conversations list|export|compactions`: the saved conversations, as text or JSON;
`compactions ID` lists a conversation's compactions, `--show N` what one replaced."""

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
    conv_compactions = conv_sub.add_parser("compactions")
    conv_compactions.add_argument("id", type=conversation_id)
    conv_compactions.add_argument(
        "--show", type=int, metavar="N", help="what compaction N replaced"
    )
    conv_compactions.add_argument("--json", action="store_true")
    add_data_dir_flag(conv_compactions)


def cmd_conversations(args: argparse.Namespace, paths: BrimPaths) -> int:
    store = Store.open(paths.ensure().db_path)
    try:
        if args.conv_command == "list":
            return _list(store, args)
        if args.conv_command == "compactions":
            return _compactions(store, args)
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


def _compactions(store: Store, args: argparse.Namespace) -> int:
    if store.get_conversation(args.id) is None:
        raise CliError(f"no conversation with id {args.id!r}")
    records = store.compactions(args.id)
    if args.show is None:
        rows = [
            {
                "number": r.number,
                "id": r.id,
                "replaced": r.replaced,
                "created": r.created,
                "restored": r.is_restored,
            }
            for r in records
        ]
        if args.json:
            print(json.dumps(rows))
            return 0
        for row in rows:
            state = "restored" if row["restored"] else "in effect"
            print(f"{row['number']:>3}  {row['id']}  {row['replaced']:>4} msgs replaced  {state}")
        return 0
    record = next((r for r in records if r.number == args.show), None)
    if record is None:
        raise CliError(
            f"no compaction {args.show} in conversation {args.id!r}: it has {len(records)}"
        )
    messages = [m.to_dict() for m in store.compaction_messages(args.id, record.id)]
    if args.json:
        print(json.dumps({"number": record.number, "id": record.id, "messages": messages}))
        return 0
    for message in messages:
        print(f"[{message['role']}] {message['content']}")
    return 0

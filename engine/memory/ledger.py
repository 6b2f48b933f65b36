"""The source ledger: sentences the user corrected, forgot or rejected, across every scope.

It is hidden (a dot file no tool lists) and only grows: a revoked sentence key stays revoked,
so a later pass cannot re-save a claim the person already took back, whichever scope it
aims at. Callers hold the memory write lock around `revoke`.

Rejecting a suggestion revokes its sentence keys too (`why="reject"`): the person's decision
stands, so no pass (the first pass on send, the compaction's extractor, the close-time
reflection, `/learn`) queues a suggestion from that sentence again, however the model words
it, since every fact quotes its sentence and so carries its keys. A sentence key names one
sentence of one message (engine/sentences.py), so re-reading the old message can never bring
it back, while the user saying it again, in a new message, gives new keys: that statement is
suggested afresh. A lesson has no sentence; its rejection revokes a key of its scope and
wording (`lesson_key`), so the same lesson is not proposed again word for word.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from pathlib import Path

from engine.memory.errors import RevokedQuote
from engine.memory.jsonfile import read_json_object, write_json_object


class SourceLedger:
    def __init__(self, path: Path) -> None:
        self.path = path

    def revoked(self) -> dict[str, dict[str, object]]:
        data = read_json_object(self.path).get("revoked", {})
        return data if isinstance(data, dict) else {}

    def is_revoked(self, key: str) -> bool:
        return key in self.revoked()

    def check(self, keys: Iterable[str]) -> None:
        """`RevokedQuote` when any key was revoked."""
        revoked = self.revoked()
        hit = [k for k in keys if k in revoked]
        if hit:
            why = revoked[hit[0]].get("why", "revoked")
            if why == "reject" and hit[0].startswith("lesson-"):
                raise RevokedQuote("the user rejected this lesson: it is not proposed again")
            if why == "reject":
                raise RevokedQuote(
                    "the user rejected a suggestion from this sentence: it is not suggested "
                    "again (a new statement from the user can be)"
                )
            raise RevokedQuote(
                f"the user {'corrected' if why == 'correct' else 'forgot'} that claim: this "
                "sentence cannot be saved again (a new statement from the user can be)"
            )

    def revoke(self, keys: Iterable[str], *, why: str, path: str) -> int:
        """Add keys to the ledger; returns how many were new."""
        wanted = [k for k in keys if k]
        if not wanted:
            return 0
        data = read_json_object(self.path)
        revoked = data.get("revoked")
        if not isinstance(revoked, dict):
            revoked = {}
        added = 0
        for key in wanted:
            if key not in revoked:
                revoked[key] = {"why": why, "path": path, "at": round(time.time(), 3)}
                added += 1
        data["revoked"] = revoked
        write_json_object(self.path, data)
        return added


def lesson_key(scope: str, statement: str) -> str:
    """The ledger key of a lesson's wording in a scope (a lesson quotes no sentence)."""
    material = f"lesson\0{scope}\0{' '.join(statement.split()).casefold()}"
    digest = hashlib.blake2b(material.encode("utf-8", "surrogatepass"), digest_size=8)
    return "lesson-" + digest.hexdigest()

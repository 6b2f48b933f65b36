"""A child process for the concurrency and crash tests: decide suggestions one at a time.

    python -m tests.engine.memory.driver ROOT accept|reject GO_FILE READY_FILE ID...

It writes READY_FILE once imported, waits for GO_FILE (so several children start together),
then accepts or rejects each ID in its own hold of the lock, printing one JSON line each.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from engine.memory import MemoryService


def main(argv: list[str]) -> int:
    root, action, go, ready, *ids = argv
    service = MemoryService(Path(root))
    Path(ready).write_text("ready", encoding="utf-8")
    deadline = time.monotonic() + 30
    while not Path(go).exists():
        if time.monotonic() > deadline:
            return 2
        time.sleep(0.002)
    decide = service.accept if action == "accept" else service.reject
    for sid in ids:
        (decision,) = decide([sid])
        print(json.dumps({"id": sid, "ok": decision.ok}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A long pass on a 4K window: the checkpoint the model is sent keeps every file it edited
(and every command it ran) before the files it only read. A pass that forgets a read reads
the file again; one that forgets an edit can undo or repeat it."""

from __future__ import annotations

import asyncio
import json

from engine.context.compaction import compact
from engine.messages import Message, ToolCall, assistant, system, tool_result, user

from .histories import FakeSummarizer, count, summaries, text

WINDOW = 4_096
EDITED = [f"app{i}/service.py" for i in range(10)]
READ = [f"services/area_{i}/handlers/request_validation_module_{i}.py" for i in range(40)]


def _call(i: int, name: str, path: str) -> list[Message]:
    key = "command" if name == "run_command" else "path"
    call = ToolCall(id=f"c{i}", name=name, arguments=json.dumps({key: path}))
    return [assistant("", (call,)), tool_result(call, text(300, "data"))]


def _long_pass() -> list[Message]:
    msgs = [system("You are Brim."), user("Fix the services: read what you need, then edit.")]
    reads, edits = iter(READ), iter(EDITED)
    for n in range(50):  # four reads, then an edit, ten times over
        if n % 5 == 4:
            msgs += _call(n, "edit_file", next(edits))
            if n == 24:
                msgs += _call(100, "run_command", "pytest -q")
        else:
            msgs += _call(n, "read_file", next(reads))
    msgs += [assistant("Edited the ten services; the tests pass."), user("Good. What next?")]
    return msgs


def test_ten_edits_and_forty_reads_on_a_4k_window_keep_every_edit_in_the_sent_checkpoint():
    # The summarizer lists what it read and nothing it changed, as long passes' summaries do.
    summarizer = FakeSummarizer(covered=[f"`{p}`" for p in READ])
    result = asyncio.run(
        compact(_long_pass(), window=WINDOW, count_message=count, summarize=summarizer)
    )
    assert result.status == "compacted", result.detail
    (checkpoint,) = summaries(result.messages)
    sent = checkpoint.content  # the checkpoint as the model is shown it
    kept = " ".join(c.arguments for m in result.messages for c in m.tool_calls)
    summarized = [p for p in EDITED if p not in kept]
    assert len(summarized) >= 8  # most of the pass went into the checkpoint
    assert all(p in sent for p in summarized), [p for p in summarized if p not in sent]
    assert "pytest -q" in sent
    # The window was too small for everything: reads were what gave way.
    assert not all(p in sent or p in kept for p in READ)

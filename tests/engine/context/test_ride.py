"""A combined checkpoint-and-memory answer is split where memory's part starts, and the
combined request is sent only where both answers fit (engine/context/ride.py, replay.py)."""

from __future__ import annotations

import pytest

from engine.context.replay import Replay, replay_request
from engine.context.ride import Joined, split_answer
from engine.messages import alternating, assistant, user
from tests.engine.context.histories import count, total

CHECKPOINT = "## Goal\n- Ship the parser.\n\n## Next Steps\n- Write the tests."
FACTS = '{"memories": [], "lessons": []}'


@pytest.mark.parametrize(
    "answer",
    [
        f"{CHECKPOINT}\n\nMemory:\n{FACTS}",
        f"{CHECKPOINT}\n**Memory:** {FACTS}",
        f"{CHECKPOINT}\n\n## memory:\n```json\n{FACTS}\n```",
        f"{CHECKPOINT}\n{FACTS}",  # no line: its JSON object still starts the part
    ],
    ids=["line", "bold", "heading", "bare-json"],
)
def test_the_checkpoint_and_memorys_part_are_split(answer: str):
    checkpoint, part = split_answer(answer)
    assert checkpoint == CHECKPOINT
    assert '"memories"' in part and "Memory" not in part


def test_an_answer_without_memorys_part_is_all_checkpoint():
    assert split_answer(CHECKPOINT) == (CHECKPOINT, "")


def _replay(window_share: float, window: int) -> Replay:
    msgs = []
    while total(msgs) < window * window_share:
        msgs += [user("Report: " + "rows written " * 30), assistant("Noted.")]
    sent = tuple(alternating(msgs))
    return Replay(sent, (), total(sent))


def test_the_combined_request_asks_for_both_answers_or_is_not_sent():
    window = 4096
    replay = _replay(0.5, window)
    alone = replay_request(
        replay, window=window, max_tokens=400, work_state=None, count_message=count
    )
    rider = Joined("[Brim memory] After the checkpoint, write a line Memory: ...", 300)
    both = replay_request(
        replay, window=window, max_tokens=400, work_state=None, count_message=count, rider=rider
    )
    assert alone is not None and both is not None
    assert both[0].max_tokens == alone[0].max_tokens + 300
    last = both[0].messages[-1].content
    assert last.endswith(rider.instruction) and "nothing before them" in last
    assert "nothing before or after" in alone[0].messages[-1].content
    # Where the rider's answer leaves the checkpoint no room, nothing combined is sent.
    greedy = Joined(rider.instruction, window)
    none = replay_request(
        replay, window=window, max_tokens=400, work_state=None, count_message=count, rider=greedy
    )
    assert none is None

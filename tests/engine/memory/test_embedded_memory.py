"""On the bundled model (embedded SmolLM2, which cannot call tools), what the user says about
themselves in so many words reaches the review queue: `brim chat --headless` with the
default agent, then `/learn`. (The reflection on leaving runs the same pass: see
test_statements.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.providers.embedded import default_model_path
from tests.helpers.cli import run_brim

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(default_model_path() is None, reason="the default model is not installed"),
]


def test_the_alex_sentence_then_learn_queues_two_suggestions_on_the_bundled_model(
    tmp_path: Path,
):
    chat = run_brim(
        ["chat", "--headless"],
        data_dir=tmp_path,
        stdin="My name is Alex. I always use tabs, never spaces.\n/learn\n",
        timeout=1800,
    )
    assert chat.returncode == 0, chat.stderr[-2000:]
    notices = [e.get("text", "") for e in chat.of_type("notice")]
    # The two statements wait from the moment they were sent; /learn says so.
    assert any(
        (n.startswith("Learn: ") and "2 from this conversation wait" in n)
        or n == "Learn: 2 new suggestions for review."
        for n in notices
    ), notices
    listed = run_brim(["memory", "list", "--json"], data_dir=tmp_path)
    items = json.loads(listed.stdout)
    assert sorted(i["quote"] for i in items) == [
        "I always use tabs, never spaces.",
        "My name is Alex.",
    ]
    assert all(i["kind"] == "fact" and i["author"] == "user" for i in items)

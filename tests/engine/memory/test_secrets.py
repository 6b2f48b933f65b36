"""The secret filter knows the shapes people really type, and the review queue never holds a
detected secret in plain text, not even one an older Brim queued."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine.memory import Completion, MemoryService, ScanInput, run_scan
from engine.memory.queue import Suggestion
from engine.messages import Message, ToolCall, user
from engine.secret_detection import find_secret
from tests.engine.memory.fakes import tags_in
from tests.helpers.cli import run_brim

# Each was queued as a memory suggestion before (issue 12, item 9).
MISSED_BEFORE = [
    "My password for the home router is hunter2.",
    "The db pw hunter2 works for staging.",
    "My router login is admin / Tr0ub4dor&3 at home.",
    "My SSN is 078-05-1120, keep it handy.",
    "Use sk_live_4eC39HqLyjWD for the shop.",
    "My IBAN is DE89 3704 0044 0532 0130 00 for refunds.",
    "-----begin openssh private key----- is how my key file starts.",
    "My wifi pass phrase is correct horse battery staple.",
    "passphrase: correct horse battery staple",
]
# Codes that open something (issue 22, break 7: the door code was queued).
LOCK_CODES = [
    "The code for the back door is 4821 at night.",
    "The alarm code: 1234, in case it goes off.",
    "The gate combination is 12-34-56.",
    "Our office wifi code is 88alpha22.",
]
ALSO_SECRETS = [
    "My OpenAI key is sk-proj-abcdefghijklmnop1234567890",
    "the password is hunter2",
    "wifi password: bluefrog",
    "my pin is 4821",
    "the token is abc123XYZ",
    "connect to postgres://admin:s3cret@db.local/app",
    "my card is 4111 1111 1111 1111",
    "-----BEGIN RSA PRIVATE KEY-----",
]
# Shapes only the maintained detector (detect-secrets) knows.
MAINTAINED = [
    ("MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs", "Discord"),
    ("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", "SendGrid"),
]
NOT_SECRETS = [
    "I always want tabs, never spaces.",
    "I prefer answers that count tokens exactly.",
    "The key point is clarity.",
    "My key binding for save is ctrl+s.",
    "The password is required for the admin page.",
    "Login is handled by the auth service.",
    "Use port 8080 for the dev server.",
    "The secret to good code is tests.",
    "I use the src/app.py layout and README.md files.",
    "Call me between 9 and 5.",
    "My login is jsmith on the build box.",
    "Our passwords are stored in 1Password.",
    "I keep API keys in the environment, never in files.",
    "The pw reset flow lives in auth/reset.py.",
    "The error code is 404 for that page.",
    "The exit code is 1 when the tests fail.",
    "The back door code changes every 3 months.",
    "The code for the back door is on the fridge.",
]


@pytest.mark.parametrize("text", MISSED_BEFORE + LOCK_CODES + ALSO_SECRETS)
def test_a_secret_in_a_shape_people_type_is_recognised(text: str):
    assert find_secret(text) is not None


@pytest.mark.parametrize(("text", "kind"), MAINTAINED)
def test_the_maintained_detectors_shapes_are_recognised_too(text: str, kind: str):
    found = find_secret(f"My bot uses {text} in production.")
    assert found is not None and kind in found


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_preferences_about_keys_passwords_and_tokens_pass(text: str):
    assert find_secret(text) is None


class Extractor:
    """An extractor that queues the user's whole message as a fact."""

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], max_tokens: int
    ) -> Completion:
        if messages[-1].role == "tool":
            return Completion("Done.")
        calls = []
        for i, (tag, text) in enumerate(tags_in(messages[1].content).items()):
            args = {"action": "create", "scope": "global", "subject": f"fact-{i}",
                    "content": text, "quote": text, "source": tag}  # fmt: skip
            calls.append(ToolCall(f"c{i}", "manage_memory", json.dumps(args)))
        return Completion("", tuple(calls))


@pytest.mark.parametrize("text", MISSED_BEFORE + LOCK_CODES)
def test_the_extractor_queues_no_suggestion_holding_a_secret(service: MemoryService, text: str):
    report = asyncio.run(
        run_scan(
            ScanInput("conv", [user(text)]),
            service=service,
            scopes=service.scopes("default", None),
            complete=Extractor(),
            count_text=lambda t: len(t.split()),
            window=4096,
        )
    )
    assert service.pending() == [] and report.queued == []
    assert len(report.refused) == 1 and "secret" in report.refused[0]
    assert "hunter2" not in report.refused[0] and "Tr0ub4dor" not in report.refused[0]


def test_a_secret_an_older_brim_queued_is_never_shown_and_leaves_the_queue_file(tmp_path: Path):
    root = tmp_path / "data" / "memory"
    root.mkdir(parents=True)
    items = [
        Suggestion(id="s-pw", kind="fact", action="create", scope="global", subject="router",
                   statement="Router password.", quote=MISSED_BEFORE[0]),
        Suggestion(id="s-ok", kind="fact", action="create", scope="global", subject="tabs",
                   statement="Tabs, never spaces.", quote="I always want tabs, never spaces."),
    ]  # fmt: skip
    queue = root / ".pending-memory.json"
    queue.write_text(json.dumps({"version": 1, "suggestions": [s.to_dict() for s in items]}))
    listed = run_brim(["memory", "list", "--json"], data_dir=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [item["id"] for item in json.loads(listed.stdout)] == ["s-ok"]
    assert "hunter2" not in listed.stdout
    assert "hunter2" not in queue.read_text(encoding="utf-8")
    assert "s-ok" in queue.read_text(encoding="utf-8")

"""One writer per conversation: a second Brim cannot open a conversation that is open."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import default_agent
from engine.conversation_claim import ConversationBusy, ConversationClaim
from engine.events import ErrorEvent, Event
from engine.paths import BrimPaths
from engine.session import ChatSession
from tests.helpers.cli import CliRun, run_brim
from tests.helpers.fake_engines import FakeLlamaServer


def _resume_args(url: str, conversation: str) -> list[str]:
    return [
        *("chat", "--headless", "--provider", "llamacpp", "--model", "fake"),
        *("--base-url", url, "--conversation", conversation),
    ]


def _resume(home: Path, url: str, conversation: str, text: str) -> CliRun:
    return run_brim(_resume_args(url, conversation), data_dir=home, stdin=text + "\n")


def _first_conversation(home: Path, url: str) -> str:
    run = run_brim(
        ["chat", "--headless", "--provider", "llamacpp", "--model", "fake", "--base-url", url],
        data_dir=home,
        stdin="Start the migration.\n",
    )
    assert run.returncode == 0, run.stderr
    return run.of_type("window")[0]["conversation"]


def _resume_held_open(home: Path, url: str, conversation: str) -> subprocess.Popen[str]:
    """A headless chat on `conversation` that stays open until its stdin closes."""
    env = {k: v for k, v in os.environ.items() if k != "BRIM_HOME"}
    args = [sys.executable, "-m", "engine.cli", "--data-dir", str(home), "chat", "--headless"]
    args += ["--provider", "llamacpp", "--model", "fake", "--base-url", url]
    args += ["--conversation", conversation]
    proc = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # open once it says which window it has
        if '"type": "window"' in line:
            return proc
    raise AssertionError(
        f"the first chat never opened: {proc.stderr.read() if proc.stderr else ''}"
    )


def test_a_second_chat_on_an_open_conversation_is_refused_and_the_first_goes_on(tmp_path: Path):
    home = tmp_path / "home"
    with FakeLlamaServer(n_ctx=8192) as fake:
        conversation = _first_conversation(home, fake.url)
        first = _resume_held_open(home, fake.url, conversation)
        try:
            second = _resume(home, fake.url, conversation, "Me too.")
            assert second.returncode == 1
            assert second.stderr.strip() == (
                f"brim: conversation {conversation!r} is open in another Brim "
                f"(process {first.pid}); close it there first, or start a new conversation"
            )
            assert [e["kind"] for e in second.of_type("error")] == ["conversation_busy"]
            assert not second.of_type("turn_end")  # nothing of it reached the conversation
            first.communicate("Carry on.\n", timeout=60)
            assert first.returncode == 0
        finally:
            if first.poll() is None:
                first.kill()
                first.communicate()
        # Once the first has finished, the conversation opens again.
        again = _resume(home, fake.url, conversation, "Now me.")
    assert again.returncode == 0, again.stderr


def test_a_killed_chat_does_not_leave_its_conversation_locked(tmp_path: Path):
    home = tmp_path / "home"
    with FakeLlamaServer(n_ctx=8192) as fake:
        conversation = _first_conversation(home, fake.url)
        held = _resume_held_open(home, fake.url, conversation)
        held.send_signal(signal.SIGKILL)
        held.communicate(timeout=30)
        again = _resume(home, fake.url, conversation, "Still there?")
    assert again.returncode == 0, again.stderr


def test_switching_to_a_conversation_open_elsewhere_keeps_the_current_one(tmp_path: Path):
    events: list[Event] = []
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )

        async def scenario() -> tuple[str, str, str, str]:
            other = ChatSession(agent, home, events.append)
            await other.start()
            await other.send("The other one.")
            await other.close()
            session = ChatSession(agent, home, events.append)
            await session.start()
            await session.send("This one.")
            mine = session.conversation_id
            elsewhere = ConversationClaim.take(home.open_dir, other.conversation_id)
            try:
                with pytest.raises(ConversationBusy):
                    await session.open_conversation(other.conversation_id)
                still = session.conversation_id
                await session.send("Still this one.")  # the session goes on where it was
            finally:
                elsewhere.release()
            await session.open_conversation(mine)  # its own conversation opens again
            await session.open_conversation(other.conversation_id)  # free again: it opens
            now = session.conversation_id
            await session.close()
            return mine, still, now, other.conversation_id

        mine, still, now, other_id = asyncio.run(scenario())
    assert still == mine and now == other_id
    assert not [e for e in events if isinstance(e, ErrorEvent)]


def test_closing_a_session_lets_its_conversation_go(tmp_path: Path):
    home = BrimPaths.resolve(tmp_path / "home")
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )

        async def scenario() -> None:
            session = ChatSession(agent, home, lambda _e: None)
            await session.start()
            with pytest.raises(ConversationBusy):
                ConversationClaim.take(home.open_dir, session.conversation_id)
            await session.close()
            ConversationClaim.take(home.open_dir, session.conversation_id).release()

        asyncio.run(scenario())


def test_a_data_folder_that_cannot_hold_locks_still_opens_the_conversation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    home = BrimPaths.resolve(tmp_path / "home").ensure()
    home.open_dir.write_text("not a folder", encoding="utf-8")  # no lock file can go there
    with FakeLlamaServer(n_ctx=8192) as fake:
        agent = default_agent().with_changes(
            name="chat", provider="llamacpp", base_url=fake.url, model=fake.model
        )
        events: list[Event] = []

        async def scenario() -> None:
            session = ChatSession(agent, home, events.append)
            await session.start()
            await session.send("Hello there.")
            await session.close()

        asyncio.run(scenario())
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert "opened without a lock" in caplog.text

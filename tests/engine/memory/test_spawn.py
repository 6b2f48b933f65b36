"""The detached reflection a chat starts runs with exactly the chat's agent: every setting
travels in a private file the child reads once, not a handful of command-line flags."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from engine.cli import build_parser
from engine.cli.reflect import reflection_agent
from engine.config import AgentConfig
from engine.memory import spawn
from engine.memory.spawn import read_agent_settings, spawn_reflection
from engine.paths import BrimPaths
from engine.store import ConversationInfo
from tests.engine.memory.fakes import FakeModel, role_of
from tests.engine.memory.test_processes import _saved_conversation
from tests.helpers.fake_engines import FakeLlamaServer


def _tuned_agent(url: str) -> AgentConfig:
    """An agent whose every setting differs from its default."""
    return AgentConfig(
        name="tuned",
        provider="llamacpp",
        base_url=url,
        api_key_env="BRIM_TEST_UNSET_KEY_VARIABLE",
        request_timeout_s=42.5,
        model="big-model",
        n_threads=3,
        num_ctx=4096,
        max_context_tokens=3000,
        summarizer_model="small-model",
        compaction_ratio=0.5,
        compaction_reserve_tokens=700,
        max_iterations=7,
        max_tokens=256,
        temperature=0.3,
        budget_max_tokens=90_000,
        system_prompt="Answer tersely.\nNever guess.",
    )


def test_the_reflection_command_hands_the_child_every_setting_of_the_agent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    started: list[list[str]] = []

    def fake_run(args, **kw):  # type: ignore[no-untyped-def]
        started.append(args[3:])  # after `python -c LAUNCHER`: the reflection's own line
        return subprocess.CompletedProcess(args, 0, b"", b"")

    monkeypatch.setattr(spawn.subprocess, "run", fake_run)
    agent = _tuned_agent("http://127.0.0.1:9")
    workspace = tmp_path / "ws"
    assert spawn_reflection(agent, ["c1", "c2"], data_dir=tmp_path, workspace=workspace)
    (line,) = started
    assert line[1:3] == ["-m", "engine.cli"]
    args = build_parser().parse_args(line[3:])
    settings = args.agent_settings
    assert settings.is_file()
    if os.name == "posix":
        assert settings.stat().st_mode & 0o777 == 0o600  # its owner's alone
    first = ConversationInfo("c1", "", "someone-else", None, 0.0, 0.0, 0)
    child = reflection_agent(args, BrimPaths.under(tmp_path), first, read_agent_settings(settings))
    assert not settings.exists()  # read once, then gone
    assert child.values() == agent.values()
    assert args.conversation == ["c1", "c2"] and args.workspace == workspace


def test_a_settings_file_the_launcher_could_not_use_is_removed(monkeypatch: pytest.MonkeyPatch):
    handed: list[Path] = []

    def failing_run(args, **kw):  # type: ignore[no-untyped-def]
        handed.append(Path(args[args.index("--agent-settings") + 1]))
        return subprocess.CompletedProcess(args, 1, b"", b"no")

    monkeypatch.setattr(spawn.subprocess, "run", failing_run)
    agent = AgentConfig(name="a", provider="llamacpp", model="m")
    assert not spawn_reflection(agent, "c1", data_dir=None, workspace=None)
    assert handed and not handed[0].exists()


def _reflection_logged(home: Path, conversation: str, timeout: float = 90) -> str:
    log = home / "logs" / "memory.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        if f" memory reflect {conversation}: " in text:
            return text
        time.sleep(0.1)
    raise AssertionError("the detached reflection did not finish")


def test_a_detached_reflection_runs_within_the_agents_window_pin(tmp_path: Path):
    """The engine serves 8,192 tokens and the agent pins 1,536: the child reads the
    conversation in the pinned window's small chunks (on the served window, one chunk), reads
    the newest with its one model request, and that request fits the pinned window with its
    answer."""
    home = tmp_path / "home"
    turns = [
        f"I always want reports in format {i}. " + "More context here. " * 60 for i in range(8)
    ]
    conversation = _saved_conversation(home, turns)
    model = FakeModel()
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.responder = model
        agent = AgentConfig(
            name="pinned",
            provider="llamacpp",
            base_url=fake.url,
            model="fake",
            max_context_tokens=1536,
        )
        assert spawn_reflection(agent, conversation, data_dir=home, workspace=None)
        logged = _reflection_logged(home, conversation)
    scans = [b for b in model.seen.get("extractor", []) if len(b["messages"]) == 2]
    assert len(scans) == 1, logged
    assert "skipped 0 chunks" not in logged
    memory = [r for r in fake.chat_requests if role_of(r.body) in ("extractor", "curator")]
    assert memory and all(r.prompt_tokens + r.body["max_tokens"] <= 1536 for r in memory)

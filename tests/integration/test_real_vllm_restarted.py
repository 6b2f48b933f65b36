"""The user's vLLM restarted: now behind an API key, under another served name, and without
`--enable-prompt-tokens-details`. One short-lived second server for this module (about 50 s
to start, 3.5 GB beside the shared one); the agent still names the old model, `smol`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench._vllm_server import RealVllmServer, running_vllm_server, unavailable
from engine.events import ErrorEvent, NoticeEvent, UsageEvent
from tests.helpers.cli import run_brim
from tests.integration.conftest import VLLM_SERVED_NAME
from tests.integration.test_real_vllm import converse, of_type, vllm_agent

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.timeout(900)]

NEW_NAME = "smol-v2"
KEY = "sk-brim-test-4f1c9e"
KEY_ENV = "BRIM_TEST_VLLM_KEY"


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealVllmServer]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    log_dir = tmp_path_factory.mktemp("vllm-restarted")
    with running_vllm_server(
        log_dir, served_name=NEW_NAME, prompt_tokens_details=False, api_key=KEY
    ) as server:
        yield server


@pytest.fixture
def key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def test_an_api_key_server_is_reached_with_the_key_the_agent_names(
    restarted: RealVllmServer, tmp_path: Path, key_in_env: None
):
    agents = tmp_path / "home" / "config" / "agents"
    agents.mkdir(parents=True)
    (agents / "keyed.toml").write_text(
        f'name = "keyed"\nprovider = "vllm"\nbase_url = "{restarted.url}"\n'
        f'model = "{NEW_NAME}"\napi_key_env = "{KEY_ENV}"\n',
        encoding="utf-8",
    )
    probe = run_brim(["probe", "--agent", "keyed", "--json"], data_dir=tmp_path / "home")
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout)["window"] == 2048
    assert KEY not in probe.stdout + probe.stderr
    without = run_brim(
        ["probe", "--agent", "keyed", "--json"],
        data_dir=tmp_path / "home",
        env={KEY_ENV: "sk-wrong"},
    )
    assert without.returncode != 0  # the server refuses another key: the key did the work
    events, _ = converse(
        vllm_agent(restarted, model=NEW_NAME, api_key_env=KEY_ENV, max_tokens=24),
        ["What is the capital of France?"],
        tmp_path / "chat",
    )
    assert of_type(events, ErrorEvent) == []
    assert len(of_type(events, UsageEvent)) == 1


def test_cached_tokens_read_not_reported_without_prompt_tokens_details(
    restarted: RealVllmServer, tmp_path: Path, key_in_env: None
):
    """vLLM caches the prefix either way; without the flag it says nothing about it, and Brim
    shows "not reported", never a 0 that would read as a cold cache."""
    agent = vllm_agent(restarted, model=NEW_NAME, api_key_env=KEY_ENV, max_tokens=16)
    events, cache_lines = converse(agent, ["Name one colour.", "Name another."], tmp_path)
    assert of_type(events, ErrorEvent) == []
    usages = of_type(events, UsageEvent)
    assert len(usages) == 2 and all(u.cached_tokens is None for u in usages)
    assert cache_lines == ["Prompt cache: not reported"]


def test_a_restart_under_another_served_name_is_followed_and_named(
    restarted: RealVllmServer, tmp_path: Path, key_in_env: None
):
    """The agent names `smol`; the server now serves the same folder as `smol-v2` only. Brim
    uses `smol-v2` without the agent being edited, and says so in a notice naming both."""
    agent = vllm_agent(restarted, api_key_env=KEY_ENV, max_tokens=16)
    assert agent.model == VLLM_SERVED_NAME
    events, _ = converse(agent, ["What is the capital of France?"], tmp_path)
    assert of_type(events, ErrorEvent) == []
    usages = of_type(events, UsageEvent)
    assert len(usages) == 1 and usages[0].counted == usages[0].prompt_tokens
    (followed,) = [n for n in of_type(events, NoticeEvent) if n.kind == "model_renamed"]
    assert followed.details == {"model": VLLM_SERVED_NAME, "served": NEW_NAME}
    assert f"'{NEW_NAME}'" in followed.text and f"'{VLLM_SERVED_NAME}'" in followed.text

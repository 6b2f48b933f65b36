"""A pin honoured, or loudly refused: after a load Brim compares the window it asked for with
the one the engine allocated (Ollama's /api/ps, llama-server's /props and /slots), and says
once why they differ, whatever the agent's fit policy. And a pin that pushed the model off
the GPU meets the policy: warn keeps it, shrink lowers it to what fits, ask offers both."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.config import default_agent
from engine.events import Event, NoticeEvent, WindowEvent
from engine.paths import BrimPaths
from engine.providers.embedded import default_model_path
from engine.session import ChatSession
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel

POLICIES = ("warn", "shrink", "ask")
MODEL = "smollm2:135m"
MIB = 1024 * 1024


def _run(
    agent: Any,
    home: Path,
    turns: list[str],
    *,
    between: dict[int, Callable[[], None]] | None = None,
) -> list[Event]:
    events: list[Event] = []

    async def go() -> None:
        chat = ChatSession(agent, BrimPaths.resolve(home / "home"), events.append)
        await chat.start()
        try:
            for index, text in enumerate(turns):
                await chat.send(text)
                if between and index in between:
                    between[index]()
        finally:
            await chat.close()

    asyncio.run(go())
    return events


def _notices(events: list[Event], kind: str) -> list[NoticeEvent]:
    return [e for e in events if isinstance(e, NoticeEvent) and e.kind == kind]


def _windows(events: list[Event]) -> list[int]:
    return [e.window for e in events if isinstance(e, WindowEvent)]


def _agent(url: str, provider: str, model: str, **changes: Any) -> Any:
    return default_agent().with_changes(
        name="chat", provider=provider, base_url=url, model=model, **changes
    )


# -- the pin not honoured --------------------------------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_an_ollama_pin_above_the_training_length_is_named_once_as_refused_by_it(
    tmp_path: Path, policy: str
) -> None:
    """Ollama caps num_ctx at the training length and says so only in its log; /api/ps shows
    the capped window, and Brim names it, once, under every policy."""
    with FakeOllama([OllamaModel(MODEL, context_length=8192)]) as fake:
        agent = _agent(fake.url, "ollama", MODEL, num_ctx=16384, on_spill=policy)
        events = _run(agent, tmp_path, ["hello", "and again", "a third time"])
        sent = {r.body["options"]["num_ctx"] for r in fake.chat_requests}
    (refused,) = _notices(events, "pin_not_honoured")
    assert refused.details["asked"] == 16384
    assert refused.details["allocated"] == 8192
    assert refused.details["cause"] == "training_length"
    assert refused.level == "warning"
    assert "trained for 8,192 tokens" in refused.text
    assert _windows(events)[-1] == 8192  # Brim accounts against what the engine holds
    assert sent == {16384}  # the pin is still what Brim asks for: no policy changes the ask


@pytest.mark.parametrize("policy", POLICIES)
def test_llama_server_slots_split_by_np_below_the_pin_are_named_as_the_split(
    tmp_path: Path, policy: str
) -> None:
    with FakeLlamaServer(n_ctx=4096, slots=2, n_ctx_train=8192) as fake:
        agent = _agent(fake.url, "llamacpp", fake.model, num_ctx=4096, on_spill=policy)
        events = _run(agent, tmp_path, ["hello", "and again"])
    (refused,) = _notices(events, "pin_not_honoured")
    assert (refused.details["asked"], refused.details["allocated"]) == (4096, 2048)
    assert (refused.details["cause"], refused.details["slots"]) == ("parallel_split", 2)
    assert "split over 2 slots (-np 2)" in refused.text
    assert "-np 1" in refused.text
    assert set(_windows(events)) == {2048}


@pytest.mark.parametrize("policy", POLICIES)
def test_llama_server_slots_smaller_for_a_reason_its_api_does_not_show_are_unknown(
    tmp_path: Path, policy: str
) -> None:
    """One slot of 2,048 on a model trained for 8,192: a smaller -c, or --fit lowering an
    unset one; neither /props nor /slots says which, so Brim does not guess."""
    with FakeLlamaServer(n_ctx=2048, slots=1, n_ctx_train=8192) as fake:
        agent = _agent(fake.url, "llamacpp", fake.model, num_ctx=4096, on_spill=policy)
        events = _run(agent, tmp_path, ["hello"])
    (refused,) = _notices(events, "pin_not_honoured")
    assert (refused.details["allocated"], refused.details["cause"]) == (2048, "unknown")
    assert "--fit" in refused.text and "does not say which" in refused.text


def test_a_pin_the_engine_holds_is_not_reported(tmp_path: Path) -> None:
    with FakeLlamaServer(n_ctx=8192, slots=2, n_ctx_train=8192) as fake:
        events = _run(_agent(fake.url, "llamacpp", fake.model, num_ctx=4096), tmp_path, ["hi"])
    with FakeOllama([OllamaModel(MODEL, context_length=8192)]) as fake:
        events += _run(_agent(fake.url, "ollama", MODEL, num_ctx=8192), tmp_path, ["hi", "again"])
    assert _notices(events, "pin_not_honoured") == []


# -- a pin that spilled off the GPU, by policy ------------------------------------------------


def _smollm2() -> str:
    path = default_model_path()
    if path is None or not Path(path).exists():
        pytest.skip("the bundled GGUF is not installed")
    return path


def _spilling() -> OllamaModel:
    # 200 of 400 MiB on the GPU at the pin: the estimate of SmolLM2 finds a smaller window,
    # and at a window that small (as a real Ollama would) all of it is on the GPU.
    return OllamaModel(
        MODEL,
        context_length=8192,
        blob=_smollm2(),
        size=400 * MIB,
        size_vram=200 * MIB,
        on_gpu_up_to=6144,
    )


def _spill_run(
    tmp_path: Path, policy: str, *, loaded: bool = False
) -> tuple[list[Event], list[int]]:
    """Three turns on a pin of 8,192 that spills; `loaded`: the model is loaded at the pin
    already when the conversation starts (the start's report sees the spill)."""
    with FakeOllama([_spilling()]) as fake:
        if loaded:
            fake.load(MODEL, 8192)
        agent = _agent(fake.url, "ollama", MODEL, num_ctx=8192, on_spill=policy)
        events = _run(agent, tmp_path, ["hello", "and again", "a third time"])
        sent = [r.body["options"]["num_ctx"] for r in fake.chat_requests]
    return events, sent


def test_warn_keeps_a_pin_that_spilled_and_says_what_spilled_once(tmp_path: Path) -> None:
    events, sent = _spill_run(tmp_path, "warn")
    (spill,) = _notices(events, "model_spilled_to_cpu")
    assert (spill.details["cpu_percent"], spill.details["num_ctx"]) == (50, 8192)
    assert 0 < int(spill.details["fits_num_ctx"]) < 8192
    assert set(sent) == {8192}
    assert _notices(events, "pin_lowered") == _notices(events, "spill_choice") == []


def test_shrink_lowers_the_pin_to_the_largest_window_on_the_gpu_and_says_so(
    tmp_path: Path,
) -> None:
    events, sent = _spill_run(tmp_path, "shrink")
    (spill,) = _notices(events, "model_spilled_to_cpu")
    fits = int(spill.details["fits_num_ctx"])
    (lowered,) = _notices(events, "pin_lowered")
    assert (lowered.details["asked"], lowered.details["lowered_to"]) == (8192, fits)
    assert "on_spill = shrink" in lowered.text and f"{fits:,}" in lowered.text
    assert sent[0] == 8192 and set(sent[1:]) == {fits}  # the next requests ask for what fits
    assert _windows(events)[-1] == fits
    assert _notices(events, "spill_choice") == []


def test_ask_offers_both_windows_as_an_event_then_keeps_the_pin(tmp_path: Path) -> None:
    events, sent = _spill_run(tmp_path, "ask")
    (spill,) = _notices(events, "model_spilled_to_cpu")
    (choice,) = _notices(events, "spill_choice")
    assert choice.details == {
        "asked": 8192,
        "fits": spill.details["fits_num_ctx"],
        "cpu_percent": 50,
        "choices": "keep,shrink",
    }
    assert set(sent) == {8192}  # headless: the event, then warn
    assert _notices(events, "pin_lowered") == []


def test_shrink_acts_before_the_first_request_on_a_spill_the_start_saw(tmp_path: Path) -> None:
    events, sent = _spill_run(tmp_path, "shrink", loaded=True)
    (spill,) = _notices(events, "model_spilled_to_cpu")
    fits = int(spill.details["fits_num_ctx"])
    (lowered,) = _notices(events, "pin_lowered")
    assert lowered.details["lowered_to"] == fits
    assert set(sent) == {fits}  # not one request at the pin that spills

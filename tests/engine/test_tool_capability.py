"""A model that cannot call tools is sent none, and the user is told once why the agent
cannot touch the folder; engines that do not say keep getting the tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cli import CliRun, run_brim
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel


def _chat(tmp_path: Path, provider: str, url: str, model: str) -> tuple[CliRun, Path]:
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    run = run_brim(
        [
            *("chat", "--headless", "--provider", provider, "--base-url", url),
            *("--model", model, "--workspace", str(ws), "--num-ctx", "4096"),
        ],
        data_dir=tmp_path / "home",
        stdin="Read calc.py.\n",
    )
    return run, ws


def _tool_notices(run: CliRun) -> list[dict[str, Any]]:
    return [n for n in run.of_type("notice") if "cannot call tools" in n["text"]]


def test_an_ollama_model_without_the_tools_capability_answers_instead_of_a_400(tmp_path: Path):
    with FakeOllama([OllamaModel("gemma3:1b", capabilities=("completion",))]) as fake:
        run, ws = _chat(tmp_path, "ollama", fake.url, "gemma3:1b")
        sent = fake.requests_to("/api/chat")
    assert run.returncode == 0, run.stderr
    assert run.of_type("turn_end") and not run.of_type("error")
    assert sent and all(not r.body.get("tools") for r in sent)
    (warned,) = _tool_notices(run)
    assert "gemma3:1b" in warned["text"] and str(ws) in warned["text"]


def test_an_ollama_model_that_calls_tools_gets_them_and_no_notice(tmp_path: Path):
    with FakeOllama([OllamaModel("qwen2.5:7b")]) as fake:
        run, _ = _chat(tmp_path, "ollama", fake.url, "qwen2.5:7b")
        sent = fake.requests_to("/api/chat")
    assert run.returncode == 0, run.stderr
    assert sent and all(r.body.get("tools") for r in sent)
    assert _tool_notices(run) == []


def test_llama_server_template_caps_decide_whether_tools_are_sent(tmp_path: Path):
    without = {"supports_tools": False, "supports_system_role": True}
    with FakeLlamaServer(n_ctx=4096, template_caps=without) as fake:
        run, _ = _chat(tmp_path / "a", "llamacpp", fake.url, fake.model)
        sent = fake.chat_requests
    assert run.returncode == 0, run.stderr
    assert sent and all(not r.body.get("tools") for r in sent)
    assert len(_tool_notices(run)) == 1
    # An older build that does not say: the tools go out as before, and nothing is claimed.
    with FakeLlamaServer(n_ctx=4096, template_caps={}) as fake:
        run, _ = _chat(tmp_path / "b", "llamacpp", fake.url, fake.model)
        sent = fake.chat_requests
    assert sent and all(r.body.get("tools") for r in sent)
    assert _tool_notices(run) == []

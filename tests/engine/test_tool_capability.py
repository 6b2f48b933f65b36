"""A model that cannot call tools is sent none, and the user is told once why the agent
cannot touch the folder; engines that do not say keep getting the tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.providers.classify import classify_http
from engine.providers.errors import ToolsUnsupported
from tests.helpers.cli import CliRun, run_brim
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, FakeVllm, OllamaModel


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


def test_a_folder_given_to_a_model_without_tools_is_said_once_as_data_and_no_tool_is_named(
    tmp_path: Path,
):
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOllama([OllamaModel("gemma3:1b", capabilities=("completion",))]) as fake:
        run = run_brim(
            [
                *("chat", "--headless", "--provider", "ollama", "--base-url", fake.url),
                *("--model", "gemma3:1b", "--workspace", str(ws), "--num-ctx", "4096"),
            ],
            data_dir=tmp_path / "home",
            stdin="Read calc.py.\nAnd main.py?\n",
        )
        sent = [r.body for r in fake.requests_to("/api/chat")]
    assert run.returncode == 0, run.stderr
    (warned,) = [n for n in run.of_type("notice") if n["kind"] == "tools_unavailable"]
    assert warned["details"] == {"reason": "model_cannot_call_tools", "model": "gemma3:1b"}
    assert len(sent) == 2
    for body in sent:
        assert not body.get("tools")
        (system,) = [m for m in body["messages"] if m["role"] == "system"]
        # Nothing invites the model to pretend it read the folder.
        assert "tool" not in system["content"].lower() and str(ws) not in system["content"]


def test_an_ollama_model_that_calls_tools_gets_them_and_no_notice(tmp_path: Path):
    with FakeOllama([OllamaModel("qwen2.5:7b")]) as fake:
        run, ws = _chat(tmp_path, "ollama", fake.url, "qwen2.5:7b")
        sent = fake.requests_to("/api/chat")
    assert run.returncode == 0, run.stderr
    assert sent and all(r.body.get("tools") for r in sent)
    assert _tool_notices(run) == []
    # The tools it is sent are the ones its prompt speaks of, in the folder it names.
    system = sent[0].body["messages"][0]["content"]
    assert "tools you are given" in system and f"Working directory: {ws}" in system


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


def test_a_vllm_started_without_tool_calling_is_asked_again_without_tools_and_says_how(
    tmp_path: Path,
):
    with FakeVllm(auto_tool_choice=False) as fake:
        fake.script_reply("It adds two numbers.")
        fake.script_reply("Still here.")
        ws = tmp_path / "ws"
        ws.mkdir()
        run = run_brim(
            [
                *("chat", "--headless", "--provider", "vllm", "--base-url", fake.url),
                *("--model", fake.model, "--workspace", str(ws)),
            ],
            data_dir=tmp_path / "home",
            stdin="Read calc.py.\nAnd again?\n",
        )
        chats = fake.chat_requests
    assert run.returncode == 0, run.stderr
    assert run.of_type("error") == []
    assert len(run.of_type("turn_end")) == 2
    # The refused request, then the same one without tools, then the next turn without them.
    assert [bool(r.body.get("tools")) for r in chats] == [True, False, False]
    (notice,) = [n for n in run.of_type("notice") if "will not take tools" in n["text"]]
    assert "--enable-auto-tool-choice" in notice["text"] and notice["level"] == "warning"


def test_each_engines_refusal_of_tools_is_recognised_with_what_to_do():
    cases = {
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set': (
            "--enable-auto-tool-choice"
        ),
        "tools param requires --jinja flag": "--jinja",
        "registry.ollama.ai/library/gemma3:1b does not support tools": "ollama show",
    }
    for message, hint in cases.items():
        error = classify_http(
            400, json.dumps({"error": message}), engine="X", url="http://127.0.0.1:1"
        )
        assert isinstance(error, ToolsUnsupported), message
        assert hint in error.hint and message in error.message
    other = classify_http(400, json.dumps({"error": "bad temperature"}), engine="X", url="u")
    assert not isinstance(other, ToolsUnsupported)

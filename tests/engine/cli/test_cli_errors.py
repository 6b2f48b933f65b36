"""Bad input at the command line: a specific message, never a traceback."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel, Reply


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_agent(data_dir: Path, name: str, text: str) -> Path:
    agents = data_dir / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    path = agents / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_malformed_agent_field_names_the_file_the_field_and_the_problem(tmp_path: Path):
    _write_agent(tmp_path, "bad", 'name = "bad"\nprovider = "ollama"\nnum_ctx = "big"\n')
    run = run_brim(["chat", "--headless", "--agent", "bad"], data_dir=tmp_path)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert "bad.toml" in run.stderr and "num_ctx" in run.stderr


def test_broken_toml_names_the_line_and_does_not_stop_other_agents(tmp_path: Path):
    _write_agent(tmp_path, "broken", 'name = "broken"\nprovider = [oops\n')
    with FakeOllama([OllamaModel("llama3.1:8b")]) as fake:
        _write_agent(
            tmp_path,
            "good",
            f'name = "good"\nprovider = "ollama"\nbase_url = "{fake.url}"\n'
            'model = "llama3.1:8b"\nnum_ctx = 4096\n',
        )
        good = run_brim(
            [
                "probe",
                "--json",
                "--provider",
                "ollama",
                "--base-url",
                fake.url,
                "--model",
                "llama3.1:8b",
                "--num-ctx",
                "4096",
            ],
            data_dir=tmp_path,
        )
        chat = run_brim(["chat", "--headless", "--agent", "good"], data_dir=tmp_path, stdin="hi\n")
    assert good.returncode == 0 and json.loads(good.stdout)["window"] == 4096
    assert chat.returncode == 0, chat.stderr
    assert chat.of_type("window")[0]["source"] == "pinned"
    broken = run_brim(["chat", "--headless", "--agent", "broken"], data_dir=tmp_path)
    assert "Traceback" not in broken.stderr
    assert "broken.toml" in broken.stderr and "line 2" in broken.stderr


def test_probing_an_unreachable_engine_exits_2_with_one_line_naming_the_url(tmp_path: Path):
    url = f"http://127.0.0.1:{_closed_port()}"
    run = run_brim(["probe", "--provider", "vllm", "--base-url", url, "--json"], data_dir=tmp_path)
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0]


def test_a_headless_chat_with_an_unreachable_engine_reports_it_and_keeps_reading(tmp_path: Path):
    url = f"http://127.0.0.1:{_closed_port()}"
    run = run_brim(
        ["chat", "--headless", "--provider", "llamacpp", "--base-url", url],
        data_dir=tmp_path,
        stdin="first\nsecond\n",
    )
    assert run.returncode == 2  # a script can tell "not reachable" from other failures
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"brim: cannot reach llama-server at {url}: connection refused"
    ]
    errors = run.of_type("error")
    # one at start, then one per message: the process read both lines
    assert len(errors) >= 2 and all(e["kind"] == "unreachable" for e in errors)
    assert all(url in e["message"] for e in errors)


def test_an_unknown_model_is_named_in_the_error(tmp_path: Path):
    with FakeOllama([OllamaModel("llama3.1:8b")]) as fake:
        probe = run_brim(
            ["probe", "--provider", "ollama", "--base-url", fake.url, "--model", "nope:1b"],
            data_dir=tmp_path,
        )
        chat = run_brim(
            [
                "chat",
                "--headless",
                "--provider",
                "ollama",
                "--base-url",
                fake.url,
                "--model",
                "nope:1b",
                "--num-ctx",
                "2048",
            ],
            data_dir=tmp_path,
            stdin="hello\n",
        )
    assert probe.returncode != 0 and "Traceback" not in probe.stderr
    assert "nope:1b" in probe.stderr
    kinds = {e["kind"] for e in chat.of_type("error")}
    assert "model_not_found" in kinds
    assert "Traceback" not in chat.stderr
    assert chat.returncode == 1
    # The error says what to do and what there is to pick from.
    assert "`ollama pull nope:1b`" in chat.stderr and "it has: llama3.1:8b" in chat.stderr


def test_an_ollama_agent_without_a_model_is_told_to_set_one_and_what_is_installed(
    tmp_path: Path,
):
    with FakeOllama([OllamaModel("qwen2.5:7b"), OllamaModel("llama3.1:8b")]) as fake:
        chat = run_brim(
            ["chat", "--headless", "--provider", "ollama", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="hello\n",
        )
    assert chat.returncode == 1
    message = chat.of_type("error")[0]["message"]
    assert "set `model` in the agent file (or pass --model)" in message
    assert "it has: llama3.1:8b, qwen2.5:7b" in message
    assert "''" not in message


def test_a_chat_that_recovers_after_a_failed_turn_ends_with_status_zero(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096) as fake:
        fake.script(Reply(fail="http500"))
        fake.script_reply("Back again.")
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="first\nsecond\n",
        )
    assert run.of_type("error"), "the first turn should have failed"
    assert run.of_type("turn_end"), "the second turn should have answered"
    assert run.returncode == 0, run.stderr


def test_the_engines_own_entry_point_sends_the_window_to_the_launcher(tmp_path):
    """`python -m engine.cli` with no command would open the window, which lives above the
    engine: it says where the window is instead of importing the desktop."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "engine.cli", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 64
    assert "launcher" in result.stderr and "Traceback" not in result.stderr

"""Which agent and engine a command runs: an ambiguous `--agent` is refused, not guessed,
and an ad-hoc engine's request timeout can be set from the command line."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer

ENGINE = ("chat", "--headless", "--provider", "llamacpp", "--base-url")


def _write_agent(data_dir: Path, file_name: str, text: str) -> Path:
    agents = data_dir / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    path = agents / file_name
    path.write_text(text, encoding="utf-8")
    return path


def test_two_agent_files_with_one_name_refuse_that_name_naming_both_files(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=1) as fake:
        engine = f'provider = "llamacpp"\nbase_url = "{fake.url}"\n'
        first = _write_agent(tmp_path, "a-good.toml", f'name = "good"\n{engine}')
        second = _write_agent(tmp_path, "b-good.toml", f'name = "good"\n{engine}num_ctx = 2048\n')
        run = run_brim(["chat", "--headless", "--agent", "good"], data_dir=tmp_path, stdin="hi\n")
        chats = len(fake.chat_requests)
    assert run.returncode == 64, run.stderr
    assert "Traceback" not in run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert str(first) in line and str(second) in line and "'good'" in line
    assert chats == 0, "a guess at one of the two agents was run"
    assert run.stdout == ""


def test_an_agent_name_used_once_still_runs_beside_a_duplicated_one(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=1) as fake:
        engine = f'provider = "llamacpp"\nbase_url = "{fake.url}"\n'
        _write_agent(tmp_path, "a.toml", f'name = "twin"\n{engine}')
        _write_agent(tmp_path, "b.toml", f'name = "twin"\n{engine}')
        _write_agent(tmp_path, "c.toml", f'name = "single"\n{engine}')
        run = run_brim(["chat", "--headless", "--agent", "single"], data_dir=tmp_path, stdin="hi\n")
    assert run.returncode == 0, run.stderr
    assert run.of_type("turn_end")


def test_request_timeout_ends_a_hung_engine_in_seconds_not_ten_minutes(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=1) as fake:
        fake.script_reply("one two three four", fail="hang", fail_after=2)
        started = time.monotonic()
        run = run_brim(
            [*ENGINE, fake.url, "--request-timeout", "1.5"],
            data_dir=tmp_path,
            stdin="hello\n",
            timeout=60,
        )
        took = time.monotonic() - started
    assert run.returncode == 1, run.stderr
    (error,) = run.of_type("error")
    assert "stopped answering" in error["message"]
    assert took < 30
    assert "Traceback" not in run.stderr


def test_a_request_timeout_out_of_range_is_a_usage_error_naming_the_range(tmp_path: Path):
    for value in ("0", "-3", "soon", ""):
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--request-timeout", value],
            data_dir=tmp_path,
        )
        assert run.returncode == 2, (value, run.stderr)
        assert "--request-timeout" in run.stderr and "Traceback" not in run.stderr
        assert ("0.1 to 86400" in run.stderr) or ("empty" in run.stderr), run.stderr


def test_headless_without_agent_runs_the_default_agents_file_with_its_pin(tmp_path: Path):
    with FakeLlamaServer(n_ctx=4096, slots=1) as fake:
        _write_agent(
            tmp_path,
            "default.toml",
            f'name = "default"\nprovider = "llamacpp"\nbase_url = "{fake.url}"\nnum_ctx = 1024\n',
        )
        run = run_brim(["chat", "--headless"], data_dir=tmp_path, stdin="hi\n")
        chats = len(fake.chat_requests)
    assert run.returncode == 0, run.stderr
    assert chats == 1  # the file's engine answered, not the built-in embedded one
    (window,) = run.of_type("window")
    assert window["window"] == 1024, window


def test_headless_says_so_when_the_default_agents_file_does_not_load(tmp_path: Path):
    _write_agent(tmp_path, "default.toml", 'name = "default"\nnum_ctx = "abc"\n')
    run = run_brim(["chat", "--headless"], data_dir=tmp_path, stdin="hi\n")
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert "default agent's file does not load" in run.stderr and "num_ctx" in run.stderr

"""The command line used the way a demanding user uses it: pipes that close early, signals
mid-answer, bytes that are not UTF-8, odd flags. Each case is one line on stderr and a
non-zero status (never a traceback), and nothing the user already saw is lost."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.memory import MemoryService
from engine.paths import BrimPaths
from tests.engine.memory.helpers import queue_facts, sentences
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer, Reply

LONG_ANSWER = " ".join(f"word{i}" for i in range(300))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _brim(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.pop("BRIM_HOME", None)
    return subprocess.Popen(
        [sys.executable, "-m", "launcher", "--data-dir", str(data_dir), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _read_deltas(proc: subprocess.Popen[bytes], n: int) -> list[dict[str, object]]:
    assert proc.stdout is not None
    seen: list[dict[str, object]] = []
    deltas = 0
    while deltas < n:
        line = proc.stdout.readline()
        assert line, "brim stopped before streaming"
        event = json.loads(line)
        seen.append(event)
        deltas += event["type"] == "delta"
    return seen


def _saved_answer(data_dir: Path) -> str:
    (conv,) = json.loads(run_brim(["conversations", "list", "--json"], data_dir=data_dir).stdout)
    export = run_brim(["conversations", "export", conv["id"], "--json"], data_dir=data_dir)
    return "".join(
        m["content"] for m in json.loads(export.stdout)["messages"] if m["role"] == "assistant"
    )


def _headless_chat(data_dir: Path, url: str) -> subprocess.Popen[bytes]:
    return _brim(data_dir, "chat", "--headless", "--provider", "llamacpp", "--base-url", url)


def _llama(*, token_delay: float = 0.0) -> FakeLlamaServer:
    server = FakeLlamaServer(n_ctx=4096, slots=1)
    server.default_reply = Reply(text=LONG_ANSWER, token_delay=token_delay)
    return server


def test_a_headless_chat_whose_reader_goes_away_stops_quietly_and_keeps_the_partial_answer(
    tmp_path: Path,
):
    with _llama(token_delay=0.02) as fake:
        proc = _brim(
            tmp_path, "chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(b"tell me a story\nand another one\n")
        proc.stdin.flush()
        _read_deltas(proc, 3)
        proc.stdout.close()  # `brim chat --headless | head -3`
        proc.stdin.close()
        rc = proc.wait(timeout=30)
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
        chats = len(fake.chat_requests)
    assert "Traceback" not in stderr and "Broken pipe" not in stderr
    assert rc != 0
    assert chats == 1, "the second line was sent to the engine with nobody reading"
    saved = _saved_answer(tmp_path)
    assert saved.startswith("word0 word1 word2") and len(saved.split()) < 300


def test_a_closed_stdout_on_probe_is_not_a_traceback(tmp_path: Path):
    with _llama() as fake:
        proc = _brim(tmp_path, "probe", "--provider", "llamacpp", "--base-url", fake.url)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stdin.close()  # type: ignore[union-attr]
        rc = proc.wait(timeout=30)
        stderr = proc.stderr.read().decode()
        proc.stderr.close()
    assert "Traceback" not in stderr and rc != 0


def test_sigterm_mid_answer_keeps_the_partial_answer_like_ctrl_c(tmp_path: Path):
    with _llama(token_delay=0.02) as fake:
        proc = _brim(
            tmp_path, "chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url
        )
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"tell me a story\n")
        proc.stdin.flush()
        _read_deltas(proc, 5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM
    assert b"Traceback" not in err
    assert any(json.loads(line)["type"] == "notice" for line in out.splitlines())
    assert _saved_answer(tmp_path).startswith("word0 word1 word2 word3 word4")


def test_ctrl_c_mid_answer_exits_130_and_keeps_the_partial_answer(tmp_path: Path):
    with _llama(token_delay=0.02) as fake:
        proc = _brim(
            tmp_path, "chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url
        )
        assert proc.stdin is not None
        proc.stdin.write(b"tell me a story\n")
        proc.stdin.flush()
        _read_deltas(proc, 5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and b"Traceback" not in err
    assert _saved_answer(tmp_path).startswith("word0 word1 word2 word3 word4")


def test_a_line_that_is_not_utf8_is_answered_and_the_next_line_still_read(tmp_path: Path):
    with _llama() as fake:
        env = dict(os.environ)
        env.pop("BRIM_HOME", None)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "engine.cli",
                "--data-dir",
                str(tmp_path),
                "chat",
                "--headless",
                "--provider",
                "llamacpp",
                "--base-url",
                fake.url,
            ],
            input=b"caf\xe9 au lait\nsecond line\n",
            capture_output=True,
            timeout=60,
            env=env,
        )
        sent = [r.body["messages"][-1]["content"] for r in fake.chat_requests]
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"Traceback" not in result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert sum(e["type"] == "turn_end" for e in events) == 2
    assert sent == ["caf\ufffd au lait", "second line"]
    assert any(e["type"] == "notice" and "UTF-8" in e["text"] for e in events)


def test_an_empty_data_dir_is_refused_instead_of_writing_into_the_current_folder(tmp_path: Path):
    env = dict(os.environ)
    env.pop("BRIM_HOME", None)
    result = subprocess.run(
        [sys.executable, "-m", "launcher", "--data-dir", "", "conversations", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env | {"PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        timeout=60,
    )
    assert result.returncode != 0
    assert "--data-dir" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_data_dir_that_is_a_file_is_one_line_naming_it(tmp_path: Path):
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    run = run_brim(["conversations", "list", "--json"], data_dir=afile)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and str(afile) in run.stderr


def _brim_with_data_dir_last(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("BRIM_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "launcher", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_data_dir_is_accepted_after_conversations_list_like_after_chat(tmp_path: Path):
    result = _brim_with_data_dir_last("conversations", "list", "--json", data_dir=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    assert (tmp_path / "h" / "data" / "brim.sqlite3").exists()


def test_data_dir_is_accepted_after_memory_list_and_reads_that_home(tmp_path: Path):
    service = MemoryService.for_paths(BrimPaths.under(tmp_path))
    ids = [s.id for s in queue_facts(service, sentences(2))]
    result = _brim_with_data_dir_last("memory", "list", "--json", data_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [s["id"] for s in json.loads(result.stdout)] == ids


@pytest.mark.parametrize("size", ["0", "-2"])
def test_a_review_page_size_below_one_is_a_usage_error_not_a_silent_skip(tmp_path: Path, size):
    service = MemoryService.for_paths(BrimPaths.under(tmp_path))
    ids = [s.id for s in queue_facts(service, sentences(3))]
    run = run_brim(["memory", "review", "--page-size", size], data_dir=tmp_path, stdin="1\n")
    assert run.returncode != 0
    assert "--page-size" in run.stderr and "Traceback" not in run.stderr
    assert [s.id for s in service.pending()] == ids


@pytest.mark.parametrize("command", ["reflect", "learn"])
def test_memory_reflection_against_an_unreachable_engine_is_one_line_and_exit_2(
    tmp_path: Path, command: str
):
    with _llama() as fake:
        chat = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="I always use tabs.\n",
        )
    conversation = chat.of_type("window")[0]["conversation"]
    url = f"http://127.0.0.1:{_closed_port()}"
    run = run_brim(
        [
            "memory",
            command,
            "--conversation",
            conversation,
            "--provider",
            "llamacpp",
            "--base-url",
            url,
        ],
        data_dir=tmp_path,
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if url in line]
    assert len(errors) == 1


def test_a_failing_memory_extractor_leaves_one_line_on_stderr_not_a_traceback(tmp_path: Path):
    # A single line far longer than the window: the engine rejects it, the ladder compacts,
    # and the extractor's own call overflows too; that failure is logged, never a traceback.
    with FakeLlamaServer(n_ctx=2048, slots=1) as fake:
        started = time.monotonic()
        run = run_brim(
            ["chat", "--headless", "--provider", "llamacpp", "--base-url", fake.url],
            data_dir=tmp_path,
            stdin="word " * 20000 + "\nafter\n",
        )
    assert time.monotonic() - started < 120
    assert run.returncode == 0
    assert "Traceback" not in run.stderr
    assert len(run.of_type("turn_end")) >= 1


def test_a_workspace_that_does_not_exist_is_refused_before_the_chat_starts(tmp_path: Path):
    with _llama() as fake:
        run = run_brim(
            [
                "chat",
                "--headless",
                "--provider",
                "llamacpp",
                "--base-url",
                fake.url,
                "--workspace",
                str(tmp_path / "typo"),
            ],
            data_dir=tmp_path / "home",
            stdin="list my files\n",
        )
        chats = len(fake.chat_requests)
    assert run.returncode != 0 and chats == 0
    assert "Traceback" not in run.stderr
    assert "--workspace" in run.stderr and "typo" in run.stderr


@pytest.mark.parametrize("suffix", ["/v1", "/v1/"])
def test_a_base_url_pasted_with_v1_reaches_the_same_server(tmp_path: Path, suffix: str):
    with _llama() as fake:
        run = run_brim(
            ["probe", "--json", "--provider", "llamacpp", "--base-url", fake.url + suffix],
            data_dir=tmp_path,
        )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["window"] == 4096


@pytest.mark.parametrize(
    "args",
    [
        ["conversations", "export", "\udcff\udcfe"],
        ["chat", "--headless", "--provider", "llamacpp", "--conversation", "\udcff"],
        ["memory", "reflect", "--provider", "llamacpp", "--conversation", "\udcff"],
    ],
)
def test_a_conversation_id_that_is_not_utf8_is_a_usage_error_not_a_traceback(
    tmp_path: Path, args: list[str]
):
    env = dict(os.environ)
    env.pop("BRIM_HOME", None)
    argv = [a.encode("utf-8", "surrogateescape") for a in args]  # bytes as a shell passes them
    result = subprocess.run(
        [sys.executable.encode(), b"-m", b"engine.cli", b"--data-dir", bytes(tmp_path), *argv],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env=env,
    )
    assert result.returncode != 0
    assert b"Traceback" not in result.stderr and b"not UTF-8" in result.stderr


def _in_shell(script: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`brim` with the shell redirections a user might write (`<&-`, `>&-`)."""
    env = dict(os.environ)
    env.pop("BRIM_HOME", None)
    command = f'echo hi | "$0" -m engine.cli "$@" {script}'
    return subprocess.run(
        ["sh", "-c", command, sys.executable, "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


ENGINE = ("--provider", "llamacpp", "--base-url")


def test_a_headless_chat_with_stdin_closed_ends_at_once_instead_of_hanging(tmp_path: Path):
    with _llama() as fake:
        run = _in_shell("<&-", tmp_path, "chat", "--headless", *ENGINE, fake.url)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["type"] == "state"


def test_commands_with_stdout_closed_run_as_if_it_were_dev_null(tmp_path: Path):
    with _llama() as fake:
        chat = _in_shell(">&-", tmp_path, "chat", "--headless", *ENGINE, fake.url)
        probe = _in_shell(">&-", tmp_path, "probe", *ENGINE, fake.url)
        listing = _in_shell(">&-", tmp_path, "conversations", "list", "--json")
    for run in (chat, probe, listing):
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr and "failed" not in run.stderr
    assert _saved_answer(tmp_path).startswith("word0 word1")

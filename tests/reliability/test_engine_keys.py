"""The engine's key stays with the engine, end to end, and the terminal obeys no engine.

A real headless `brim` against a keyed vLLM double, with the key in the variable the
agent's `api_key_env` names and `--approve auto`: the model runs `printenv` and reads a
`.env` file holding the key. The key is in none of the requests the double receives after
that (only in their Authorization header), in no byte of `brim.sqlite3` or any other file
Brim wrote, and on neither stdout nor stderr. A 401 body that echoes the key is shown
without it, on `brim chat --headless` and `brim probe`; an error or a model name holding
terminal control sequences (a window-title write, a clear-screen, a bidi override) is
printed with them shown, not obeyed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import CliRun, run_brim
from tests.helpers.fake_engines import FakeToolCall, FakeVllm

# Not the shape of any known credential: only Brim's knowing it keeps it out.
KEY = "brim-engine-key-41c7d2"
VARIABLE = "BRIM_TEST_ENGINE_KEY"
OSC = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil"
RAW_CONTROLS = ("\x1b", "\x07", "\u202e")


def _agent(data_dir: Path, fake: FakeVllm) -> None:
    folder = data_dir / "config" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gpu.toml").write_text(
        f'name = "gpu"\nprovider = "vllm"\nbase_url = "{fake.url}"\n'
        f'model = "{fake.model}"\napi_key_env = "{VARIABLE}"\n',
        encoding="utf-8",
    )


def _occurrences_in_files(root: Path, secret: str) -> int:
    """How often `secret` appears in the bytes of the files under `root` (the workspace, the
    user's own, aside): the database, its WAL, the journal, stored tool results."""
    needle = secret.encode()
    files = [p for p in root.rglob("*") if p.is_file() and "ws" not in p.relative_to(root).parts]
    return sum(p.read_bytes().count(needle) for p in files)


def _files_holding(root: Path, secret: str) -> list[str]:
    """The files under `root` holding `secret`, the workspace (the user's own) aside."""
    needle = secret.encode()
    found = [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
    return [str(p) for p in found if "ws" not in p.relative_to(root).parts]


def _chat(data_dir: Path, workspace: Path | None, lines: list[str]) -> CliRun:
    args = ["chat", "--headless", "--agent", "gpu", "--approve", "auto"]
    if workspace is not None:
        args += ["--workspace", str(workspace)]
    return run_brim(
        args, data_dir=data_dir, stdin="".join(f"{x}\n" for x in lines), env={VARIABLE: KEY}
    )


def test_the_key_reaches_no_tool_no_request_body_no_file_and_no_terminal(tmp_path: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(f"ENGINE_KEY={KEY}\nDEBUG=1\n", encoding="utf-8")
    with FakeVllm() as fake:
        fake.api_key = KEY
        _agent(tmp_path, fake)
        fake.script_reply(tool_calls=[FakeToolCall("run_command", {"command": "printenv"})])
        fake.script_reply(tool_calls=[FakeToolCall("read_file", {"path": ".env"})])
        fake.script_reply("Done.")
        chat = _chat(tmp_path, workspace, ["Show me the environment and the .env file."])
        bodies = [json.dumps(r.body) for r in fake.chat_requests]
    assert chat.returncode == 0 and chat.of_type("turn_end"), chat.stderr
    assert len(bodies) == 3
    assert not [b for b in bodies if KEY in b]
    assert "PATH=" in bodies[1]  # printenv ran and its output was sent
    assert "[redacted: looks like an engine API key]" in bodies[2]
    notices = [n for n in chat.of_type("notice") if n.get("kind") == "secret_redacted"]
    assert [n["details"] for n in notices] == [
        {"tool": "read_file", "count": 1, "kinds": "an engine API key"}
    ]
    assert (tmp_path / "data" / "brim.sqlite3").is_file()
    in_results = sum(b.count(KEY) for b in bodies)
    in_store = _occurrences_in_files(tmp_path, KEY)
    on_terminal = (chat.stdout + chat.stderr).count(KEY)
    print(
        f"\nkeys found after printenv and a .env read: in what the model was sent {in_results}, "
        f"in the store {in_store}, on the terminal {on_terminal}"
    )
    assert (in_results, in_store, on_terminal) == (0, 0, 0)
    assert _files_holding(tmp_path, KEY) == []


def test_a_401_that_echoes_the_key_is_shown_without_it(tmp_path: Path):
    echo = json.dumps({"error": {"message": f"Invalid API key: {KEY}", "code": 401}})
    with FakeVllm() as fake:
        _agent(tmp_path, fake)
        fake.override(fake.chat_path, 401, echo)
        chat = _chat(tmp_path, None, ["Hello?"])
        fake.override("/v1/models", 401, echo)
        probe = run_brim(["probe", "--agent", "gpu"], data_dir=tmp_path, env={VARIABLE: KEY})
    (error,) = chat.of_type("error")
    assert "HTTP 401" in error["message"] and "[redacted: looks like" in error["message"]
    assert probe.returncode == 1 and "HTTP 401" in probe.stderr
    on_terminal = sum((run.stdout + run.stderr).count(KEY) for run in (chat, probe))
    in_store = _occurrences_in_files(tmp_path, KEY)
    print(
        f"\nkeys found after a 401 that echoes it: on the terminal {on_terminal}, "
        f"in the store {in_store}"
    )
    assert (on_terminal, in_store) == (0, 0)


def test_control_sequences_from_the_engine_are_shown_not_obeyed(tmp_path: Path):
    body = json.dumps({"error": {"message": f"engine broke {OSC}", "code": 500}})
    with FakeVllm(model=f"model{OSC}") as odd:  # the model list names it so
        flags = ["probe", "--provider", "vllm", "--base-url", odd.url]
        listed = run_brim(flags, data_dir=tmp_path / "other")
    with FakeVllm() as fake:
        _agent(tmp_path, fake)
        fake.override(fake.chat_path, 500, body)
        chat = _chat(tmp_path, None, ["Hello?"])
        fake.override("/v1/models", 500, body)
        probe = run_brim(["probe", "--agent", "gpu"], data_dir=tmp_path)
    # No model named: the refusal lists what the engine serves, as the engine named it.
    assert listed.returncode == 1
    assert "it serves: model␛]0;pwned␇␛[2J␛[31mred<U+202E>evil" in listed.stderr
    assert "engine broke ␛]0;pwned␇" in chat.stderr and "<U+202E>evil" in chat.stderr
    assert "engine broke ␛]0;pwned␇" in probe.stderr
    for run in (listed, chat, probe):
        text = run.stdout + run.stderr
        assert not [c for c in RAW_CONTROLS if c in text], text
    (error,) = chat.of_type("error")
    assert "\x1b]0;pwned" in error["message"]  # a program reading the JSON still gets the text

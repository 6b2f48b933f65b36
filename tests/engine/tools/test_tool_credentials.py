"""A tool never hands Brim's keys on: not to the commands it runs, not in what it returns.

`run_command` children get Brim's environment without the variables that hold engine keys
(every agent's `api_key_env`, the one Brim hands its own children) and without any variable
the secret detector flags; a result that holds a key anyway (a `.env` file read) reaches
neither the model nor the result store: the key becomes a marker naming its kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.credentials import CHILD_KEY_VARIABLE
from engine.tools.environment import child_environment

pytestmark = pytest.mark.anyio

# Not the shape of any known credential: only its variable's name gives it away.
KEY = "brim-engine-key-41c7d2"
VARIABLE = "BRIM_TEST_ENGINE_KEY"
GITHUB = "ghp_" + "Abc123Def456Ghi789Jkl012Mno345Pqr678"
OPENAI = "sk-proj-" + "q8Wn3Lx7Vb2Kc9Tz4Hs6Jd1Fg5"


async def test_printenv_under_api_key_env_shows_neither_the_key_nor_its_variable(
    registry, make_ctx, monkeypatch
):
    monkeypatch.setenv(VARIABLE, KEY)
    monkeypatch.setenv(CHILD_KEY_VARIABLE, KEY)
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB)
    monkeypatch.setenv("BRIM_HARMLESS", "plain value")
    # The variable names only: the key's value is not handed to the tool, so what keeps it
    # out is the environment the child gets, not the redaction of its output.
    ctx = make_ctx(credential_variables=frozenset({VARIABLE}))
    outcome = await registry.call("run_command", {"command": "printenv"}, ctx)
    assert not outcome.is_error, outcome.content
    assert KEY not in outcome.content and GITHUB not in outcome.content
    assert f"{VARIABLE}=" not in outcome.content and "GITHUB_TOKEN=" not in outcome.content
    assert "BRIM_HARMLESS=plain value" in outcome.content
    assert "PATH=" in outcome.content  # a command still finds its programs
    last = outcome.content.splitlines()[-1]
    assert last == (
        "[not passed to the command, because they hold credentials: "
        f"{CHILD_KEY_VARIABLE}, {VARIABLE}, GITHUB_TOKEN]"
    )


def test_every_variable_the_detector_flags_is_withheld_and_paths_are_not():
    base = {
        "PATH": "/usr/local/bin:/usr/bin",
        "JAVA_HOME": "/usr/lib/jvm/java-17-openjdk-amd64/Xq7Rz9Lm2Kw4Tb8Nc3Vd6",
        "HF_TOKEN": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
        "DATABASE_URL": "postgres://app:s3cr3t-pw@db.internal/prod",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "MY_PASSWORD": "Tr0ub4dor&3",
        "SOME_VALUE": OPENAI,
        "TOKENIZERS_PARALLELISM": "false",
        "EDITOR": "vim",
    }
    got = child_environment(base=base)
    assert got.withheld == (
        "AWS_SECRET_ACCESS_KEY",
        "DATABASE_URL",
        "HF_TOKEN",
        "MY_PASSWORD",
        "SOME_VALUE",
    )
    assert set(got.variables) == {"PATH", "JAVA_HOME", "TOKENIZERS_PARALLELISM", "EDITOR"}


async def test_a_key_read_from_a_file_is_redacted_before_the_model_or_the_store_sees_it(
    registry, make_ctx, workspace: Path, tmp_path: Path
):
    lines = [f"line {i}: nothing to see here" for i in range(1000)]
    lines[10] = f"OPENAI_API_KEY={OPENAI}"
    lines[990] = f"ENGINE={KEY}"
    (workspace / ".env").write_text("\n".join(lines), encoding="utf-8")
    ctx = make_ctx(credentials=(KEY,))
    args = {"command": "cat .env"}
    outcome = await registry.call("run_command", args, ctx, call_id="call_1")
    assert outcome.redacted == {"an API key": 1, "an engine API key": 1}
    assert OPENAI not in outcome.content
    assert "OPENAI_API_KEY=[redacted: looks like an API key]" in outcome.content
    # The result was cut and stored whole for retrieve_tool_result: the store holds no key.
    assert outcome.truncated
    stored = [p.read_bytes() for p in (tmp_path / "work").rglob("*") if p.is_file()]
    assert stored and not any(OPENAI.encode() in b or KEY.encode() in b for b in stored)
    rest = await registry.call(
        "retrieve_tool_result", {"tool_call_id": "call_1", "offset": 15_000}, ctx
    )
    assert "ENGINE=[redacted: looks like an engine API key]" in rest.content


async def test_a_result_without_secrets_is_left_as_it_was(registry, make_ctx, workspace: Path):
    lines = [
        "token = next(tokens)",
        "password = form['password']",
        "cache = '/tmp/Xq7Rz9Lm2Kw4Tb8Nc3Vd6Yp1Hs5/Jd1Fg5Qw8'",
        "commit = '3f2a9c1e5b7d8a0f4e6c2b1a9d8e7f6a5b4c3d2e'",
    ]
    (workspace / "code.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    outcome = await registry.call("read_file", {"path": "code.py"}, make_ctx())
    assert outcome.redacted == {}
    assert all(line in outcome.content for line in lines), outcome.content

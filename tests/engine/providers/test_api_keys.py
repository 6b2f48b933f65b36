"""An engine started with `--api-key` is reached with the agent's key, which stays secret.

The key goes out as `Authorization: Bearer` and nowhere else: not in what `brim probe`
prints, not in any file Brim writes, not on the detached reflection's command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from engine.config import AgentConfig, AgentConfigError
from engine.config.credentials import CHILD_KEY_VARIABLE, agent_api_key
from engine.memory import spawn
from engine.providers.registry import make_provider
from engine.session import provider_for
from tests.helpers.cli import run_brim
from tests.helpers.fake_ollama import FakeOllama
from tests.helpers.fake_openai import FakeLlamaServer
from tests.helpers.fake_vllm import FakeSglang, FakeVllm

pytestmark = pytest.mark.anyio

KEY = "sk-brim-test-7f3a9c1e5b"
VARIABLE = "BRIM_TEST_ENGINE_KEY"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _agent_file(data_dir: Path, name: str, fake: FakeVllm, extra: str) -> None:
    folder = data_dir / "config" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.toml").write_text(
        f'name = "{name}"\nprovider = "vllm"\nbase_url = "{fake.url}"\n'
        f'model = "{fake.model}"\n{extra}\n',
        encoding="utf-8",
    )


def _files_holding(root: Path, secret: str) -> list[str]:
    needle = secret.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_keyed_vllm_answers_a_probe_and_a_chat_with_the_key_from_the_environment(
    tmp_path: Path,
):
    with FakeVllm() as fake:
        fake.api_key = KEY
        _agent_file(tmp_path, "gpu", fake, f'api_key_env = "{VARIABLE}"')
        env = {VARIABLE: KEY}
        probe = run_brim(["probe", "--agent", "gpu"], data_dir=tmp_path, env=env)
        as_json = run_brim(["probe", "--agent", "gpu", "--json"], data_dir=tmp_path, env=env)
        chat = run_brim(
            ["chat", "--headless", "--agent", "gpu"], data_dir=tmp_path, stdin="Hi\n", env=env
        )
        keyed = [r for r in fake.requests if r.headers.get("authorization") == f"Bearer {KEY}"]
        assert fake.chat_requests and len(keyed) == len(fake.requests)
    assert probe.returncode == 0, probe.stderr
    assert f"api key: set (from {VARIABLE} env)" in probe.stdout
    assert json.loads(as_json.stdout)["api_key"] == f"set (from {VARIABLE} env)"
    assert chat.returncode == 0 and chat.of_type("turn_end"), chat.stderr
    for run in (probe, as_json, chat):
        assert KEY not in run.stdout + run.stderr
    assert _files_holding(tmp_path, KEY) == []


def test_without_the_key_the_engines_401_says_to_check_it(tmp_path: Path):
    with FakeVllm() as fake:
        fake.api_key = KEY
        _agent_file(tmp_path, "gpu", fake, f'api_key_env = "{VARIABLE}"')
        probe = run_brim(["probe", "--agent", "gpu"], data_dir=tmp_path, env={VARIABLE: ""})
    assert probe.returncode == 1
    assert "HTTP 401: Unauthorized" in probe.stderr and "check the API key" in probe.stderr
    assert "Traceback" not in probe.stderr


@pytest.mark.parametrize("fake_type", [FakeLlamaServer, FakeVllm, FakeSglang, FakeOllama])
async def test_every_http_engine_sends_the_agents_key_as_a_bearer_header(fake_type, monkeypatch):
    kind = {FakeLlamaServer: "llamacpp", FakeVllm: "vllm", FakeSglang: "sglang"}
    with fake_type() as fake:
        monkeypatch.setenv(VARIABLE, KEY)
        agent = AgentConfig(
            name="keyed",
            provider=kind.get(fake_type, "ollama"),
            base_url=fake.url,
            api_key_env=VARIABLE,
        )
        provider = provider_for(agent)
        try:
            models = await provider.list_models()
            await provider.report(models[0].id)
        finally:
            await provider.aclose()
        sent = {r.headers.get("authorization") for r in fake.requests}
    assert sent == {f"Bearer {KEY}"}


async def test_the_command_line_api_key_env_flag_reaches_a_keyed_server(tmp_path: Path):
    with FakeVllm() as fake:
        fake.api_key = KEY
        probe = run_brim(
            [
                "probe",
                "--provider",
                "vllm",
                "--base-url",
                fake.url,
                "--model",
                fake.model,
                "--api-key-env",
                VARIABLE,
            ],
            data_dir=tmp_path,
            env={VARIABLE: KEY},
        )
    assert probe.returncode == 0, probe.stderr
    assert KEY not in probe.stdout + probe.stderr


def test_credentials_in_the_url_are_refused_not_sent_as_basic_auth():
    with pytest.raises(AgentConfigError) as caught:
        AgentConfig(name="x", provider="vllm", base_url="http://bob:hunter2@gpu-box:8000")
    message = str(caught.value)
    assert "Basic auth" in message and "Authorization: Bearer" in message
    assert "api_key_env" in message
    assert "hunter2" not in message


def test_a_key_is_never_shown_in_the_agents_repr_or_an_error():
    agent = AgentConfig(name="x", provider="vllm", api_key=KEY)
    assert KEY not in repr(agent)
    with pytest.raises(AgentConfigError) as caught:
        AgentConfig(name="x", provider="vllm", api_key=KEY + "\r\nX-Evil: 1")
    assert KEY not in str(caught.value)


def test_a_missing_variable_is_named_in_the_probe_state(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    agent = AgentConfig(name="x", provider="vllm", api_key_env=VARIABLE)
    assert agent_api_key(agent).describe() == (
        f"missing ({VARIABLE} is not set in the environment)"
    )


def test_the_detached_reflection_gets_the_key_in_its_environment_not_its_command_line(
    monkeypatch,
):
    from engine.memory.runtime import SessionMemory

    seen: dict[str, object] = {}

    def fake_run(args, **kw):
        seen["argv"], seen["env"] = args, kw["env"]
        settings = Path(args[args.index("--agent-settings") + 1])
        seen["settings"] = settings.read_text(encoding="utf-8")
        settings.unlink()
        return subprocess.CompletedProcess(args, 0, b"", b"")

    monkeypatch.setattr(spawn.subprocess, "run", fake_run)
    memory = SessionMemory.__new__(SessionMemory)
    memory.writes = True
    memory.workspace = None
    agent = AgentConfig(
        name="gpu", provider="vllm", base_url="http://127.0.0.1:8000", model="m", api_key=KEY
    )
    started = memory.spawn_reflection(agent, data_dir=None, conversations=["c1"])
    assert started
    argv = " ".join(seen["argv"])  # type: ignore[arg-type]
    assert KEY not in argv
    assert KEY not in seen["settings"]  # type: ignore[operator]
    assert json.loads(seen["settings"])["api_key_env"] == CHILD_KEY_VARIABLE  # type: ignore[arg-type]
    assert seen["env"][CHILD_KEY_VARIABLE] == KEY  # type: ignore[index]


def test_a_provider_given_a_url_with_credentials_refuses_it_rather_than_send_basic_auth():
    with pytest.raises(ValueError, match="Authorization: Bearer") as caught:
        make_provider("vllm", "http://bob:hunter2@127.0.0.1:8000")
    assert "hunter2" not in str(caught.value)


def _command_lines_holding(secret: str) -> list[str]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            line = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if secret.encode() in line:
            found.append(line.replace(b"\0", b" ").decode("utf-8", "replace"))
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_a_detached_reflection_reaches_a_keyed_engine_with_no_key_on_any_command_line(
    tmp_path: Path,
):
    import time

    from engine.memory import MemoryService
    from engine.paths import BrimPaths
    from tests.engine.memory.fakes import FakeModel, Save, saving
    from tests.engine.memory.test_processes import _saved_conversation

    home = tmp_path / "home"
    pref = "I always want reports in format number 7."
    conversation = _saved_conversation(home, [pref])
    with FakeLlamaServer(n_ctx=8192) as fake:
        fake.api_key = KEY
        fake.responder = FakeModel(extract=saving(Save(pref, "format", pref)))
        agent = AgentConfig(
            name="keyed", provider="llamacpp", base_url=fake.url, model="fake", api_key=KEY
        )
        assert spawn.spawn_reflection(agent, conversation, data_dir=home, workspace=None)
        service = MemoryService(BrimPaths.under(home).memory_dir)
        leaked: list[str] = []
        deadline = time.monotonic() + 90
        # The deterministic pass queues the sentence before the model is asked: wait for both.
        while not (service.pending() and fake.chat_requests) and time.monotonic() < deadline:
            leaked += _command_lines_holding(KEY)
            time.sleep(0.05)
        assert [s.quote for s in service.pending()] == [pref]
        assert fake.chat_requests
        assert {r.headers.get("authorization") for r in fake.requests} == {f"Bearer {KEY}"}
    assert leaked == []
    assert _files_holding(home, KEY) == []

"""Proxy variables never carry a loopback engine's traffic; other hosts follow them.

A proxy configured for the web (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) must not receive the
prompts meant for the engine on this machine, through either client Brim uses (httpx for
the OpenAI-compatible engines, the official ollama client)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engine.providers.registry import make_provider
from engine.providers.routes import engine_route, is_loopback
from tests.helpers.cli import run_brim
from tests.helpers.fake_ollama import FakeOllama
from tests.helpers.fake_openai import FakeLlamaServer
from tests.helpers.fake_vllm import FakeVllm
from tests.helpers.recording_proxy import RecordingProxy

pytestmark = pytest.mark.anyio

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _proxy_env(url: str) -> dict[str, str]:
    """Every proxy variable pointing at `url`, and no exception for this machine."""
    return {**dict.fromkeys(PROXY_VARIABLES, url), "NO_PROXY": "", "no_proxy": ""}


@pytest.fixture
def proxy(monkeypatch) -> Iterator[RecordingProxy]:
    """A recording proxy named by every proxy variable (it relays to `proxy.target`)."""
    with RecordingProxy("http://127.0.0.1:9") as recording:
        for key, value in _proxy_env(recording.url).items():
            monkeypatch.setenv(key, value)
        yield recording


@pytest.mark.parametrize("kind", ["llamacpp", "vllm", "ollama"])
async def test_a_loopback_engine_is_reached_directly_with_every_proxy_variable_set(
    proxy: RecordingProxy, kind: str
):
    fake = {"llamacpp": FakeLlamaServer, "vllm": FakeVllm, "ollama": FakeOllama}[kind]()
    with fake:
        for base in (fake.url, fake.url.replace("127.0.0.1", "localhost")):
            provider = make_provider(kind, base)
            try:
                models = await provider.list_models()
                report = await provider.report(models[0].id)
            finally:
                await provider.aclose()
            assert report.model and fake.requests
    assert proxy.requests == []


async def test_the_official_ollama_client_streams_a_chat_past_the_proxy(proxy: RecordingProxy):
    from engine.messages import user
    from engine.providers.base import ChatOptions

    with FakeOllama() as fake:
        fake.script_reply("hello there")
        provider = make_provider("ollama", fake.url)
        try:
            model = (await provider.list_models())[0].id
            items = [i async for i in provider.stream_chat(model, [user("hi")], ChatOptions())]
        finally:
            await provider.aclose()
        assert fake.requests_to("/api/chat")
    assert items and proxy.requests == []


async def test_a_remote_engine_follows_the_proxy_variables(monkeypatch):
    with FakeVllm() as fake, RecordingProxy(fake.url) as recording:
        monkeypatch.setenv("http_proxy", recording.url)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        provider = make_provider("vllm", "http://gpu-box.invalid:8000")
        try:
            assert provider.route.describe() == f"via proxy {recording.url} (from http_proxy)"
            models = await provider.list_models()
        finally:
            await provider.aclose()
    assert models[0].id == fake.model
    assert ("GET", "http://gpu-box.invalid:8000/v1/models") in recording.requests


def test_no_proxy_sends_a_listed_host_directly(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.lan")
    route = engine_route("https://gpu-box.lan:8443/v1")
    assert route.direct
    assert route.describe() == "direct (the host is listed in NO_PROXY)"
    assert engine_route("https://gpu.example.com").describe() == (
        "via proxy http://proxy.corp:3128 (from HTTPS_PROXY)"
    )


def test_the_proxy_route_is_shown_without_its_credentials(monkeypatch):
    monkeypatch.setenv("ALL_PROXY", "http://bob:hunter2@proxy.corp:3128")
    route = engine_route("http://gpu.example.com:8000")
    assert route.proxy == "http://bob:hunter2@proxy.corp:3128"  # httpx still gets them
    shown = route.describe() + json.dumps(route.to_json())
    assert "hunter2" not in shown and "bob" not in shown
    assert route.describe() == "via proxy http://proxy.corp:3128 (from ALL_PROXY)"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("api.localhost", True),
        ("0.0.0.0", True),
        ("::", True),
        ("[::]", True),
        ("127.1", True),
        ("2130706433", True),
        ("0x7f000001", True),
        ("0177.0.0.1", True),
        ("::ffff:0.0.0.0", True),
        ("10.0.0.5", False),
        ("167772165", False),  # 10.0.0.5 written as one number
        ("gpu-box.invalid", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_means_this_machine_only(host: str, loopback: bool):
    assert is_loopback(host) is loopback


def test_a_socks_proxy_for_a_loopback_engine_does_not_stop_brim(monkeypatch):
    # httpx refuses to build a client for a SOCKS proxy without the socksio package; a
    # loopback engine never uses the proxy, so it never gets that far.
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    provider = make_provider("llamacpp", "http://127.0.0.1:8080")
    assert provider.route.direct


def test_brim_probe_says_the_route_and_the_proxy_gets_nothing(tmp_path):
    with FakeLlamaServer(n_ctx=4096) as fake, RecordingProxy(fake.url) as recording:
        env = _proxy_env(recording.url)
        probe = ["probe", "--provider", "llamacpp", "--base-url", fake.url]
        text = run_brim(probe, data_dir=tmp_path, env=env)
        as_json = run_brim([*probe, "--json"], data_dir=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    assert "route: direct (a loopback address is never sent through a proxy)" in text.stdout
    result = json.loads(as_json.stdout)
    assert result["route"] == {"direct": True, "proxy": None, "reason": "loopback", "from": ""}
    assert recording.requests == []


# Every spelling of this machine that the system connects to, besides 127.0.0.1 itself.
LOOPBACK_SPELLINGS = ("0.0.0.0", "127.1", "2130706433", "0x7f000001")  # httpx refuses 0177.0.0.1


@pytest.mark.parametrize("kind", ["llamacpp", "ollama"])
@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
async def test_every_spelling_of_this_machine_bypasses_the_proxy(
    proxy: RecordingProxy, kind: str, host: str
):
    fake = {"llamacpp": FakeLlamaServer, "ollama": FakeOllama}[kind]()
    with fake:
        provider = make_provider(kind, fake.url.replace("127.0.0.1", host))
        try:
            assert provider.route.describe() == (
                "direct (a loopback address is never sent through a proxy)"
            )
            models = await provider.list_models()
            report = await provider.report(models[0].id)
        finally:
            await provider.aclose()
        assert report.model and fake.requests
    assert proxy.requests == []


def test_a_name_that_resolves_to_this_machine_only_bypasses_the_proxy(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    import socket

    answers = {
        "brim-box": ["127.0.1.1"],  # Debian's hosts-file line for the machine's own name
        "mixed-box": ["127.0.0.1", "10.0.0.5"],
    }

    def resolve(name, *args, **kw):
        if name not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "not numeric")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in answers[name]]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert engine_route("http://brim-box:8080").describe() == (
        "direct (a loopback address is never sent through a proxy)"
    )
    assert engine_route("http://mixed-box:8080").proxy == "http://proxy.corp:3128"
    assert engine_route("http://unknown-box:8080").proxy == "http://proxy.corp:3128"

"""The offline guarantee: a whole headless session (streaming, compaction, memory extraction,
the review CLI) opens no connection except to the engine the agent names, also when the
proxy variables name a proxy."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.engine.memory.fakes import FakeModel, Save, saving
from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer
from tests.helpers.recording_proxy import RecordingProxy

PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
PREF = "I always prefer British spelling in everything you write."
FILLER = [f"Filler {i}: " + "lorem ipsum dolor sit " * 40 for i in range(12)]

# Imported by every Python process started with this folder on PYTHONPATH (brim, and any
# process brim starts): logs each connect and name lookup before it happens.
RECORDER = """
import json, os, sys

def _record(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname"):
        target = args[1] if event == "socket.connect" else args[:2]
        with open(os.environ["BRIM_CONNECT_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps([event, repr(target), os.getpid()]) + "\\n")

sys.addaudithook(_record)
"""


def _full_session(tmp_path: Path, extra_env: dict[str, str]) -> tuple[list[list], str]:
    """Chat (streaming, compaction, extraction), review, accept, chat again; every
    connection and name lookup each process made, and the engine's address."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(RECORDER, encoding="utf-8")
    log = tmp_path / "connections.jsonl"
    env = {
        **extra_env,
        "BRIM_CONNECT_LOG": str(log),
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
    }
    model = FakeModel(extract=saving(Save(PREF, "spelling", "The user prefers British spelling.")))
    with FakeLlamaServer(n_ctx=2048) as fake:
        fake.responder = model
        engine = ["--provider", "llamacpp", "--model", "fake", "--base-url", fake.url]
        lines = "\n".join([f"Hello. {PREF}", *FILLER, "/compact"]) + "\n"
        chat = run_brim(["chat", "--headless", *engine], data_dir=tmp_path, stdin=lines, env=env)
        assert chat.returncode == 0, chat.stderr
        listed = run_brim(["memory", "list", "--json"], data_dir=tmp_path, env=env)
        (item,) = json.loads(listed.stdout)
        accepted = run_brim(["memory", "accept", item["id"]], data_dir=tmp_path, env=env)
        assert accepted.returncode == 0, accepted.stderr
        again = run_brim(["chat", "--headless", *engine], data_dir=tmp_path, stdin="Hi\n", env=env)
        assert again.returncode == 0, again.stderr
        engine_address = repr(("127.0.0.1", fake.port))
    assert chat.of_type("compaction") and model.seen.get("extractor")  # it all really ran
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r for r in records if r[0] == "socket.connect"], "the recorder is not installed"
    return records, engine_address


def test_a_full_session_connects_only_to_the_configured_engine(tmp_path: Path):
    records, engine_address = _full_session(tmp_path, {})
    elsewhere = [r for r in records if r[0] != "socket.connect" or r[1] != engine_address]
    assert elsewhere == []


def test_with_every_proxy_variable_set_the_proxy_receives_nothing(tmp_path: Path):
    # A desktop behind a corporate proxy: the variables name it and NO_PROXY is empty.
    # The prompts for the engine on this machine must still go to the engine alone.
    with RecordingProxy("http://127.0.0.1:9") as proxy:
        env = {key: proxy.url for key in PROXY_VARIABLES} | {"NO_PROXY": "", "no_proxy": ""}
        records, engine_address = _full_session(tmp_path, env)
        received = list(proxy.requests)
    assert received == []
    elsewhere = [r for r in records if r[0] != "socket.connect" or r[1] != engine_address]
    assert elsewhere == []

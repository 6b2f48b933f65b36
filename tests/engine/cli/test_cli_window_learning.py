"""The headless contract carries what the engine revealed about its window as data."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer, FakeOllama, OllamaModel
from tests.helpers.fake_ollama import OUT_OF_MEMORY

MODEL = "qwen3:8b"


def test_a_headless_chat_on_an_unloaded_ollama_model_emits_the_window_it_was_loaded_with(
    tmp_path: Path,
):
    """Loaded at the start (no messages), the model's window is the first one emitted."""
    with FakeOllama([OllamaModel(MODEL, context_length=40960)], default_num_ctx=4096) as fake:
        fake.script_reply("Hello there.")
        run = run_brim(
            [
                "chat",
                "--headless",
                "--provider",
                "ollama",
                "--base-url",
                fake.url,
                "--model",
                MODEL,
            ],
            data_dir=tmp_path,
            stdin="hi\n",
        )
        loads = len(fake.load_requests)
    assert run.returncode == 0, run.stderr
    assert loads == 1
    windows = [(e["window"], e["source"]) for e in run.of_type("window")]
    assert windows == [(4096, "server")]
    assert run.of_type("window_learned") == []


def test_a_headless_chat_whose_start_load_fails_emits_what_the_first_answer_taught(
    tmp_path: Path,
):
    with FakeOllama(
        [OllamaModel(MODEL, context_length=40960)],
        default_num_ctx=4096,
        refuse_loads=OUT_OF_MEMORY,
    ) as fake:
        fake.script_reply("Hello there.")
        run = run_brim(
            [
                "chat",
                "--headless",
                "--provider",
                "ollama",
                "--base-url",
                fake.url,
                "--model",
                MODEL,
            ],
            data_dir=tmp_path,
            stdin="hi\n",
        )
    assert run.returncode == 0, run.stderr
    windows = [(e["window"], e["source"]) for e in run.of_type("window")]
    assert windows == [(4096, "assumed"), (4096, "server")]
    (learned,) = run.of_type("window_learned")
    assert {k: learned[k] for k in ("engine", "model", "old", "new", "source", "cause")} == {
        "engine": "ollama",
        "model": MODEL,
        "old": 4096,
        "new": 4096,
        "source": "server",
        "cause": "loaded",
    }
    assert learned["compacts_at"] == 3276


class _LoadsForThreePolls(FakeLlamaServer):
    """A llama-server whose model finishes loading after /health has said 503 three times."""

    def _health(self, ex, req):  # type: ignore[no-untyped-def]
        if len(self.requests_to("/health")) > 3:
            self.loading = False
        super()._health(ex, req)


def test_a_headless_probe_of_a_loading_llama_server_waits_and_says_so_on_stderr(tmp_path: Path):
    with _LoadsForThreePolls(n_ctx=4096, loading=True) as fake:
        run = run_brim(
            ["probe", "--provider", "llamacpp", "--base-url", fake.url, "--json"],
            data_dir=tmp_path,
        )
    assert run.returncode == 0, run.stderr
    assert "loading its model" in run.stderr
    assert '"window": 4096' in run.stdout

"""`brim probe` against real llama-servers: whether the server moves cached chunks to new
positions is found by its probe's `timings.cache_n`, not by the model's name.

Brim sends `n_cache_reuse` with every request, and llama-server takes a request's value over
its `--cache-reuse` default, so what decides is the model: SmolLM2 (a plain transformer) is
moved with or without the flag; Gemma 3 270M (sliding-window attention) cannot be, and the
server turns chunk reuse off for it whatever it is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench._llama_server import RealLlamaServer, running_llama_server
from engine.providers import bundled_models
from tests.helpers.cli import run_brim

pytestmark = [pytest.mark.slow, pytest.mark.llama_server, pytest.mark.timeout(600)]


def _probed(url: str, data_dir: Path) -> dict[str, object]:
    run = run_brim(
        ["probe", "--provider", "llamacpp", "--base-url", url, "--json"], data_dir=data_dir
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)["cache_reuse"]
    assert isinstance(found, dict)
    return found


def test_smollm2_is_found_to_reuse_moved_chunks(llama_server: RealLlamaServer, tmp_path: Path):
    """The shared server, started without --cache-reuse: the request's own value applies."""
    found = _probed(llama_server.url, tmp_path)
    assert found["reuses"] is True, found
    assert isinstance(found["moved"], int) and found["moved"] >= 100, found


def test_smollm2_started_with_cache_reuse_is_found_to_reuse_moved_chunks(tmp_path: Path):
    extra = ["--cache-reuse", "256"]
    with running_llama_server(tmp_path, ctx=2048, parallel=1, extra_args=extra) as srv:
        found = _probed(srv.url, tmp_path)
    assert found["reuses"] is True, found


def test_gemma_3_270m_a_sliding_window_model_is_found_not_to_reuse_moved_chunks(tmp_path: Path):
    gemma = bundled_models.named("gemma-3-270m-q4_k_m")
    path = bundled_models.model_file(gemma) if gemma is not None else None
    if path is None:
        pytest.skip("Gemma 3 270M is not installed")
    extra = ["--cache-reuse", "256"]
    with running_llama_server(tmp_path, ctx=2048, parallel=1, extra_args=extra, model=path) as srv:
        found = _probed(srv.url, tmp_path)
        log = srv.log_path.read_text(errors="replace")
    assert found["reuses"] is False, found
    assert found["moved"] == 0, found
    assert "cache_reuse is not supported" in log or "cache reuse is not supported" in log

"""The embedded engine's offload settings reach llama.cpp, and the probe says where the model
went: backend, devices, layers on the GPU, where the KV cache sits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.fit.estimate import FitRequest, estimate
from engine.fit.report import read_facts
from engine.providers.bundled_models import SMOLLM2, model_file
from tests.helpers.cli import run_brim

pytestmark = pytest.mark.slow


def _agent(data_dir: Path, body: str) -> None:
    agents = data_dir / "config" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "gpu.toml").write_text(f'name = "gpu"\nprovider = "embedded"\n{body}')


def test_the_probe_reports_the_backend_and_the_layers_offloaded_after_load(tmp_path: Path):
    run = run_brim(["probe", "--provider", "embedded", "--json"], data_dir=tmp_path)
    assert run.returncode == 0, run.stderr
    offload = json.loads(run.stdout)["offload"]
    # This machine's llama-cpp-python has no GPU backend: the default is 0 layers, on the CPU.
    assert offload["gpu_offload_supported"] is False
    assert (offload["backend"], offload["layers_offloaded"], offload["gpu_layers"]) == (
        "CPU", 0, 0,
    )  # fmt: skip
    assert offload["kv_on_gpu"] is False and offload["devices"] == []
    assert sum(offload["model_bytes"].values()) > 90 * 1024 * 1024  # SmolLM2's 92 MiB


def test_an_agents_kv_cache_type_is_the_cache_llama_cpp_allocates(tmp_path: Path):
    _agent(tmp_path, 'num_ctx = 4096\nkv_cache_type = "q8_0"\nflash_attn = "on"\n')
    run = run_brim(["probe", "--agent", "gpu", "--json"], data_dir=tmp_path)
    assert run.returncode == 0, run.stderr
    offload = json.loads(run.stdout)["offload"]
    assert offload["kv_cache_type"] == "q8_0"
    path = model_file(SMOLLM2)
    assert path is not None
    expected = estimate(
        read_facts(str(path)), FitRequest(4096, "q8_0", swa_full=True), gpu_free=None, ram=None
    ).kv_bytes
    allocated = sum(offload["kv_bytes"].values())
    assert abs(allocated - expected) <= 0.02 * expected  # f16 would be 1.9 times as much


def test_a_quantized_cache_with_flash_attention_off_is_refused_saying_why(tmp_path: Path):
    _agent(tmp_path, 'kv_cache_type = "q4_0"\nflash_attn = "off"\n')
    run = run_brim(["probe", "--agent", "gpu", "--json"], data_dir=tmp_path)
    assert run.returncode == 64
    assert "q4_0 quantizes the V cache, which llama.cpp does only with flash attention" in (
        run.stderr
    )
    assert "Traceback" not in run.stderr

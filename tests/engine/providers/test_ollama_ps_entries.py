"""One model in `/api/ps` that Brim cannot read does not hide the one it asks about.

Before, the official client's ProcessResponse failed whole when any loaded model's
`context_length` was not an integer, so every line was a protocol_error; now the entries
are read one by one and the odd one is passed over.
"""

from __future__ import annotations

import asyncio

import pytest

from engine.providers.ollama import OllamaProvider
from tests.helpers.fake_engines import FakeOllama, OllamaModel

MODEL = "llama3.1:8b"


@pytest.mark.parametrize("odd", ["a lot", 1.5, [8192], {"n": 1}])
def test_another_models_unreadable_context_length_in_api_ps_is_passed_over(odd: object):
    models = [OllamaModel(MODEL, context_length=131072), OllamaModel("other:7b")]
    with FakeOllama(models) as fake:
        fake.loaded["other:7b"] = odd  # type: ignore[assignment]
        fake.loaded[MODEL] = 8192
        provider = OllamaProvider(fake.url)

        async def go() -> tuple[int | None, int | None]:
            try:
                report = await provider.report(MODEL)
                return report.served, await provider.loaded_window(MODEL)
            finally:
                await provider.aclose()

        served, loaded = asyncio.run(go())
    assert served == 8192 and loaded == 8192


def test_its_own_unreadable_entry_leaves_the_window_unknown_not_an_error():
    with FakeOllama([OllamaModel(MODEL, context_length=131072)]) as fake:
        fake.loaded[MODEL] = "eight thousand"  # type: ignore[assignment]
        provider = OllamaProvider(fake.url)

        async def go() -> int | None:
            try:
                return (await provider.report(MODEL)).served
            finally:
                await provider.aclose()

        assert asyncio.run(go()) is None

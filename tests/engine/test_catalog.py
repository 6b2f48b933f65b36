"""The model catalog snapshot: local names matched to hosted listings, offline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.catalog import ModelCatalog, catalog_window, default_catalog, name_key


@pytest.mark.parametrize(
    "name",
    [
        "llama3.1:8b",
        "meta-llama/Meta-Llama-3.1-8B-Instruct",
        "Meta-Llama-3.1-8B-Instruct-Q4_K_M",
        "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
    ],
)
def test_local_spellings_of_the_same_weights_share_one_key(name):
    assert name_key(name) == ("llama", "3.1", "8b")


def test_the_shipped_snapshot_knows_llama_3_1_at_128k():
    assert catalog_window("llama3.1:8b") == 131072
    assert catalog_window("Meta-Llama-3.1-8B-Instruct-Q4_K_M") == 131072


def test_the_shipped_snapshot_knows_hugging_face_names():
    assert catalog_window("Qwen/Qwen2.5-7B-Instruct") is not None
    assert catalog_window("qwen2.5:7b-instruct-q4_K_M") == catalog_window(
        "Qwen/Qwen2.5-7B-Instruct"
    )


@pytest.mark.parametrize("name", ["", "my-own-finetune", "SmolLM2-135M-Instruct.Q4_1.gguf"])
def test_an_unknown_model_has_no_catalog_window(name):
    assert catalog_window(name) is None


def test_hosts_that_disagree_give_the_largest_figure():
    catalog = ModelCatalog([("org/qwen3.8-27b", 262144), ("qwen3.8-27b", 120000)])
    assert catalog.window("qwen3.8:27b") == 262144
    assert catalog.lookup("qwen3.8:27b").listings == 2


def test_a_name_without_a_size_matches_its_family():
    catalog = ModelCatalog(
        [("llama-3.1-8b-instruct", 131072), ("llama-3.1-70b-instruct", 65536), ("llama-3", 8192)]
    )
    assert catalog.window("llama3.1:latest") == 131072
    assert catalog.window("llama3.1:13b") is None


def test_listings_without_a_context_are_skipped():
    catalog = ModelCatalog([("model-a-7b", None), ("model-a-7b", 0), ("model-b-7b", 4096)])
    assert catalog.window("model-a:7b") is None
    assert catalog.window("model-b:7b") == 4096


class CountingListings:
    """Listings that remember how often they were read."""

    def __init__(self) -> None:
        self.reads = 0

    def __iter__(self) -> Iterator[tuple[str, int | None]]:
        self.reads += 1
        yield ("phi-4", 16384)


def test_the_catalog_is_read_lazily_and_once():
    listings = CountingListings()
    catalog = ModelCatalog(listings)
    assert listings.reads == 0
    assert catalog.window("phi4") == 16384
    assert catalog.window("phi-4-Q8_0.gguf") == 16384
    assert catalog.window("other") is None
    assert listings.reads == 1


def test_one_catalog_serves_the_whole_process():
    assert default_catalog() is default_catalog()

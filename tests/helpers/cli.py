"""Run the real `brim` command line in a subprocess and read its JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("type") == kind]


def run_brim(
    args: list[str],
    *,
    data_dir: Path,
    stdin: str = "",
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> CliRun:
    full_env = dict(os.environ)
    full_env.pop("BRIM_HOME", None)
    full_env.update(env or {})
    result = subprocess.run(
        [sys.executable, "-m", "launcher", "--data-dir", str(data_dir), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )
    return CliRun(result.returncode, result.stdout, result.stderr)

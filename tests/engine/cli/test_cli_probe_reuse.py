"""`brim probe` says whether the server moves cached chunks to new positions, as found by a
probe request (not from the model's name): in its JSON and in its text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_brim
from tests.helpers.fake_engines import FakeLlamaServer


@pytest.mark.parametrize(("can_shift", "said"), [(True, "yes"), (False, "no")])
def test_brim_probe_says_whether_the_server_reuses_its_cache_at_new_positions(
    tmp_path: Path, can_shift: bool, said: str
):
    with FakeLlamaServer(can_shift=can_shift) as fake:
        flags = ["probe", "--provider", "llamacpp", "--base-url", fake.url]
        as_json = run_brim([*flags, "--json"], data_dir=tmp_path)
        as_text = run_brim(flags, data_dir=tmp_path)
    assert as_json.returncode == 0 and as_text.returncode == 0, as_json.stderr + as_text.stderr
    reuse = json.loads(as_json.stdout)["cache_reuse"]
    assert reuse["reuses"] is can_shift
    assert reuse["cached"] > reuse["common_prefix"] if can_shift else reuse["moved"] == 0
    assert f"  Cache reuse at new positions: {said} (probed)" in as_text.stdout.splitlines()

"""The desktop entry and the AppStream metainfo that ship with the bundle: valid by the
standard validators, and consistent with each other and with the repository."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
APP_ID = "io.brim.Brim"
DESKTOP = PACKAGING / f"{APP_ID}.desktop"
METAINFO = PACKAGING / f"{APP_ID}.metainfo.xml"


def _tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian package {package})")
    return path


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def test_the_desktop_entry_passes_desktop_file_validate_without_a_warning():
    tool = _tool("desktop-file-validate", "desktop-file-utils")
    result = subprocess.run([tool, str(DESKTOP)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not re.search(r"\b(error|warning):", result.stdout + result.stderr), result.stdout


def test_the_metainfo_passes_appstreamcli_validate():
    tool = _tool("appstreamcli", "appstream")
    result = subprocess.run(
        [tool, "validate", "--no-net", str(METAINFO)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_desktop_entry_starts_the_brim_command_with_the_shipped_icon():
    entry = _desktop_entry()
    assert entry["Exec"].split()[0] == "brim"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    assert "brim" in scripts  # the same name pip installs and the bundle's program has
    assert (ROOT / "resources" / "icons" / f"{entry['Icon']}.svg").is_file()


def test_the_metainfo_launches_the_desktop_entry_and_names_the_current_version():
    component = ET.parse(METAINFO).getroot()
    assert component.findtext("id") == APP_ID
    assert component.findtext("launchable") == DESKTOP.name
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    releases = [r.get("version") for r in component.iter("release")]
    assert releases and releases[0] == version


def test_every_metainfo_screenshot_is_a_screenshot_in_the_repository():
    images = [image.text or "" for image in ET.parse(METAINFO).getroot().iter("image")]
    assert images
    for url in images:
        path = url.split("/brim/", 1)[-1]
        assert path.startswith("docs/screenshots/"), url
        assert (ROOT / path).is_file(), f"{url} names {path}, which is not in the repository"


def test_the_bundle_entry_runs_module_and_code_forms_as_python_would(tmp_path: Path):
    """Unfrozen, the entry behaves as in the bundle: `-m` and `-c` run as Python, with the
    arguments after them as sys.argv."""
    entry = str(PACKAGING / "brim_main.py")
    code = subprocess.run(
        [sys.executable, entry, "-c", "import sys; print(sys.argv)", "a", "b"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert code.returncode == 0, code.stderr
    assert code.stdout.strip() == "['-c', 'a', 'b']"
    listing = ["--data-dir", str(tmp_path), "conversations", "list", "--json"]
    module = subprocess.run(
        [sys.executable, entry, "-m", "engine.cli", *listing],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert module.returncode == 0, module.stderr
    assert json.loads(module.stdout) == []

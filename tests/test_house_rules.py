"""The rules of the house that a reviewer should not have to remember."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "shiboken2", "qasync")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_under_engine_imports_qt():
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "engine").rglob("*.py"))
        if _imported_modules(p) & set(QT_MODULES)
    ]
    assert offenders == []


def test_no_module_under_engine_imports_the_desktop():
    """The launcher above both rooms starts the window; the engine never reaches up to it
    (function-local imports count too: ast.walk sees every import statement)."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "engine").rglob("*.py"))
        if "desktop" in _imported_modules(p)
    ]
    assert offenders == []


def test_importing_the_whole_engine_loads_no_qt_module():
    code = (
        "import importlib, pkgutil, sys, engine\n"
        "for m in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
        "    importlib.import_module(m.name)\n"
        f"bad = [n for n in sys.modules if n.split('.')[0] in {QT_MODULES!r}]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr

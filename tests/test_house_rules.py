"""The rules of the house that a reviewer should not have to remember."""

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "shiboken2", "qasync")
ENGINE_FACADE = "engine.api"  # the one engine module desktop/ may import


def _imported_names(path: Path) -> set[str]:
    """Every dotted name `path` imports, function-local imports included (ast.walk sees every
    statement): `import a.b` gives a.b; `from a.b import c` gives a.b.c, so
    `from engine import session` is engine.session. Relative imports stay in their package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _is_qt(name: str) -> bool:
    return name.split(".")[0] in QT_MODULES


def _is_desktop(name: str) -> bool:
    return name.split(".")[0] == "desktop"


def _is_engine_beside_the_facade(name: str) -> bool:
    if name.split(".")[0] != "engine":
        return False
    return name != ENGINE_FACADE and not name.startswith(ENGINE_FACADE + ".")


def offenders(root: Path, room: str, forbidden: Callable[[str], bool]) -> list[str]:
    """`file: name` for each import under `root/room` that `forbidden` refuses."""
    return [
        f"{path.relative_to(root)}: {name}"
        for path in sorted((root / room).rglob("*.py"))
        for name in sorted(_imported_names(path))
        if forbidden(name)
    ]


def test_no_module_under_engine_imports_qt():
    assert offenders(ROOT, "engine", _is_qt) == []


def test_no_module_under_engine_imports_the_desktop():
    """The launcher above both rooms starts the window; the engine never reaches up to it."""
    assert offenders(ROOT, "engine", _is_desktop) == []


def _is_tests(name: str) -> bool:
    return name.split(".")[0] == "tests"


def test_the_benchmarks_import_nothing_from_the_tests():
    """bench/ ships its own scripted pieces (bench/streaming_session.py); tests are not a
    library."""
    assert offenders(ROOT, "bench", _is_tests) == []


def test_the_desktop_imports_the_engine_only_through_engine_api():
    """desktop/ sees the engine through one facade, so the engine's rooms can move freely."""
    assert offenders(ROOT, "desktop", _is_engine_beside_the_facade) == []


def test_the_desktop_is_offered_no_router():
    """What was typed goes to the session as it is, and the session says what it took (an
    AcceptedEvent): the facade gives the desktop no way to route text on its own."""
    import engine.api

    router = {"route", "Route", "Action"}
    assert router.isdisjoint(engine.api.__all__)
    assert [name for name in router if hasattr(engine.api, name)] == []


DESKS = ("desktop/navigator.py", "desktop/agent_editing.py", "desktop/memory_desk.py")
WINDOW_AS_A_WHOLE = frozenset(
    ("geometry", "normalGeometry", "isMaximized", "resize", "move", "setWindowState", "addAction")
)


def _is_window(node: ast.expr) -> bool:
    """`window` or `self.window`."""
    if isinstance(node, ast.Name):
        return node.id == "window"
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "window"
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def reaches_through_the_window(text: str) -> list[str]:
    """What a desk's source uses of the window (`window.x`, `self.window.x`) other than the
    window as a whole: its place on the screen, its actions, a signal connected to."""
    tree = ast.parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_window(node.value)):
            continue
        above = parents.get(node)
        if node.attr in WINDOW_AS_A_WHOLE or (
            isinstance(above, ast.Attribute) and above.attr == "connect"
        ):
            continue
        found.append(ast.unparse(node))
    return found


def test_the_desks_are_handed_the_widgets_they_drive():
    """A desk drives the widgets it was given; the window itself only parents its dialogs,
    has its geometry saved, and has signals the desk connects to."""
    found = {
        desk: reaches_through_the_window((ROOT / desk).read_text(encoding="utf-8"))
        for desk in DESKS
    }
    assert found == {desk: [] for desk in DESKS}


def test_a_reach_through_the_window_is_found():
    found = reaches_through_the_window(
        "self.window.banner.show_error('x', 'y')\nlist(window.splitter.sizes())\n"
        "Drafts(self.window.composer)\nself.window.prepare_for_conversation()\n"
    )
    assert sorted(found) == [
        "self.window.banner",
        "self.window.composer",
        "self.window.prepare_for_conversation",
        "window.splitter",
    ]
    assert (
        reaches_through_the_window(
            "window.closing.connect(f)\nself.window.resize(1, 2)\nself.banner.hide()\n"
            "Dialog(parent=self.window)\n"
        )
        == []
    )


# -- the checks catch what they are for (a small tree of rule breakers) -------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("room", "forbidden", "breaking", "allowed"),
    [
        (
            "engine",
            _is_qt,
            [
                "import PySide6\n",
                "from PySide6.QtCore import QObject\n",
                "def later():\n    from shiboken6 import isValid\n",
            ],
            ["import json\n", "from engine.events import Event\n"],
        ),
        (
            "engine",
            _is_desktop,
            [
                "import desktop.app\n",
                "from desktop import theme\n",
                "def later():\n    from desktop.app import main\n",
            ],
            ["from engine.paths import BrimPaths\n", "from . import events\n"],
        ),
        (
            "desktop",
            _is_engine_beside_the_facade,
            [
                "from engine.events import Event\n",
                "from engine import session\n",
                "import engine.memory.layout\n",
                "import engine\n",
                "class A:\n    def later(self):\n        from engine.session import ChatSession\n",
            ],
            [
                "from engine.api import Event, route\n",
                "from engine import api\n",
                "import engine.api\n",
                "from desktop.bridge import EngineBridge\n",
                "from .format import format_rate\n",
            ],
        ),
        (
            "bench",
            _is_tests,
            ["from tests.helpers.fake_provider import InProcessEngine\n", "import tests\n"],
            ["from bench import format_table\n", "from engine.api import route\n"],
        ),
    ],
)
def test_each_rule_fails_on_a_module_that_breaks_it(
    tmp_path: Path,
    room: str,
    forbidden: Callable[[str], bool],
    breaking: list[str],
    allowed: list[str],
):
    for index, text in enumerate(breaking):
        root = _tree(tmp_path / f"bad{index}", {f"{room}/sub/m.py": text})
        assert len(offenders(root, room, forbidden)) == 1, text
    files = {f"{room}/ok{index}.py": text for index, text in enumerate(allowed)}
    assert offenders(_tree(tmp_path / "good", files), room, forbidden) == []


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

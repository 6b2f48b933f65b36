"""The rules of the house that a reviewer should not have to remember."""

import ast
import contextlib
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
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


# -- one writer for each of the window's widgets -----------------------------------------
#
# MainWindow (desktop/main_window.py) owns its widgets; the desks are handed it as a port
# (desktop/ports.py) of intents. What it owns is read from its own source, so a widget
# added or renamed there is covered at once; a desk is any other module of desktop/
# outside desktop/widgets/ (widgets compose widgets) and the window's own modules,
# whatever it names its variables.

WINDOW = "desktop/main_window.py"  # builds the window: its widgets are read from here
# The window's modules: the one that builds it, and its mixin that draws the engine's events.
WINDOW_MODULES = frozenset((WINDOW, "desktop/window_events.py"))
WINDOW_BUILDER = "desktop/app.py"  # builds the window: the one desk that imports it
WIDGETS = "desktop/widgets"
QT_WIDGETS = "PySide6.QtWidgets"
REACHING_CALLS = frozenset(("getattr", "setattr", "hasattr", "attrgetter"))


@dataclass(frozen=True)
class Owned:
    """What the window owns: `attributes` maps each attribute its `__init__` assigns a
    widget to (`self.composer = Composer()`) to that widget's class; `classes` maps the
    names of the widget classes it imports from desktop.widgets (and their other names
    there: `ErrorBanner = Banner`) to the class; `modules` are the modules they come from."""

    attributes: dict[str, str]
    classes: dict[str, str]
    modules: frozenset[str]


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str) -> list[str]:
    """Every dotted name imported (relative imports resolved against `module`)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: -node.level]
                base = ".".join([*package, base] if base else package)
            names.extend(f"{base}.{alias.name}" for alias in node.names)
    return names


def owned_widgets(root: Path) -> Owned:
    tree = ast.parse((root / WINDOW).read_text(encoding="utf-8"))
    widget_package = WIDGETS.replace("/", ".") + "."
    classes: dict[str, str] = {}
    modules: set[str] = set()
    makers: set[str] = set()  # the names a widget is made with in the window
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(widget_package):
                found = {a.asname or a.name for a in node.names if a.name[:1].isupper()}
                if found:
                    classes.update((name, name) for name in found)
                    modules.add(node.module)
                    makers |= found
            elif node.module == QT_WIDGETS:
                makers |= {alias.asname or alias.name for alias in node.names}
    for name in modules:  # `ErrorBanner = Banner`: another name for an owned class
        module_tree = ast.parse((root / (name.replace(".", "/") + ".py")).read_text("utf-8"))
        for node in module_tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and node.value.id in classes
            ):
                named = classes[node.value.id]
                classes.update((t.id, named) for t in node.targets if isinstance(t, ast.Name))
    attributes: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.FunctionDef) and node.name == "__init__"):
            continue
        for statement in ast.walk(node):
            if not (
                isinstance(statement, ast.Assign)
                and isinstance(statement.value, ast.Call)
                and isinstance(statement.value.func, ast.Name)
                and statement.value.func.id in makers
            ):
                continue
            for target in statement.targets:
                if _is_self_attribute(target):
                    assert isinstance(target, ast.Attribute)
                    attributes[target.attr] = statement.value.func.id
    return Owned(attributes, classes, frozenset(modules))


def _is_self_attribute(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _own_widgets(tree: ast.AST) -> set[str]:
    """The attributes a module makes for itself (`self.hint = QLabel(...)` in a dialog):
    a widget of its own, not the window's."""
    return {
        target.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for target in node.targets
        if isinstance(target, ast.Attribute) and _is_self_attribute(target)
    }


def _annotation_parts(annotation: ast.expr) -> list[ast.AST]:
    """Every node of an annotation, a quoted one parsed: `"Composer | None"` gives
    `Composer` too."""
    parts: list[ast.AST] = []
    for part in ast.walk(annotation):
        parts.append(part)
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            with contextlib.suppress(SyntaxError):
                parts.extend(ast.walk(ast.parse(part.value, mode="eval").body))
    return parts


def _annotations(tree: ast.AST) -> list[ast.AST]:
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            found.extend(_annotation_parts(node.annotation))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            found.extend(_annotation_parts(node.returns))
    return found


def _reaches(node: ast.Attribute, owned: Owned, own: set[str], parents: dict) -> bool:
    """`anything.composer` used as the window's widget: not a call of a method of that name
    (`session.transcript()`), nor the module's own widget of that name (`self.hint`)."""
    if node.attr not in owned.attributes:
        return False
    above = parents.get(node)
    if isinstance(above, ast.Call) and above.func is node:
        return False
    return not (_is_self_attribute(node) and node.attr in own)


def reaches_for_widgets(text: str, owned: Owned, module: str = "desktop.desk") -> list[str]:
    """What a desk's source does that only the window may: import the window's widget
    classes or their modules (or the window itself, but for the module that builds it),
    name a widget class (an annotation, a parameter, isinstance), or reach a widget the
    window owns under any name (`anything.composer`, `getattr(w, "composer")`)."""
    tree = ast.parse(text)
    found = []
    for name in _imports(tree, module):
        window = name == "desktop.main_window" or name.startswith("desktop.main_window.")
        if (
            any(name == m or name.startswith(m + ".") for m in owned.modules)
            or name.rsplit(".", 1)[-1] in owned.classes
            or (window and module != WINDOW_BUILDER.removesuffix(".py").replace("/", "."))
        ):
            found.append(f"imports {name}")
    for node in [*ast.walk(tree), *_annotations(tree)]:
        ident = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if isinstance(node, ast.Name | ast.Attribute) and ident in owned.classes:
            found.append(f"names {ident}")
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    own = _own_widgets(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _reaches(node, owned, own, parents):
            found.append(f"reaches {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and _called(node.func) in REACHING_CALLS:
            strings = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if any(s in owned.attributes for s in strings if isinstance(s, str)):
                found.append(f"reaches {ast.unparse(node)}")
    return found


def _called(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def widget_writers(root: Path, owned: Owned) -> dict[str, set[str]]:
    """For each widget the window owns, the modules of desktop/ (outside desktop/widgets/)
    that call a method of it: on `anything.<its attribute>`, on a name bound to one
    (`c = w.composer`), or on a parameter or variable annotated with its class."""
    writers: dict[str, set[str]] = {attribute: set() for attribute in owned.attributes}
    by_class: dict[str, set[str]] = {}
    for attribute, cls in owned.attributes.items():
        by_class.setdefault(cls, set()).add(attribute)
    for path in sorted((root / "desktop").rglob("*.py")):
        relative = str(path.relative_to(root))
        if relative.startswith(WIDGETS + "/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        own = set() if relative in WINDOW_MODULES else _own_widgets(tree)
        bound: dict[str, set[str]] = {}  # a plain name standing for owned widgets
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Attribute)
                and _reaches(node.value, owned, own, parents)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        bound.setdefault(target.id, set()).add(node.value.attr)
            if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
                target = node.target if isinstance(node, ast.AnnAssign) else None
                name = node.arg if isinstance(node, ast.arg) else getattr(target, "id", "")
                for part in _annotation_parts(node.annotation):
                    ident = getattr(part, "id", getattr(part, "attr", ""))
                    cls = owned.classes.get(ident, "")
                    bound.setdefault(name, set()).update(by_class.get(cls, set()))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            widget = node.func.value
            if isinstance(widget, ast.Attribute) and _reaches(widget, owned, own, parents):
                writers[widget.attr].add(relative)
            elif isinstance(widget, ast.Name):
                for attribute in bound.get(widget.id, ()):
                    writers[attribute].add(relative)
    return writers


def desk_modules(root: Path) -> list[Path]:
    return [
        path
        for path in sorted((root / "desktop").rglob("*.py"))
        if str(path.relative_to(root)) not in WINDOW_MODULES
        and not str(path.relative_to(root)).startswith(WIDGETS + "/")
    ]


def test_the_window_owns_the_widgets_the_desks_used_to_write():
    owned = owned_widgets(ROOT)
    assert {"composer", "header", "banner", "setup_banner", "transcript", "sidebar"} <= set(
        owned.attributes
    )
    assert {"Composer", "HeaderBar", "Banner", "ErrorBanner", "TranscriptView"} <= set(
        owned.classes
    )


def test_no_desk_reaches_for_a_widget_of_the_window():
    """A desk is handed the window as a port of intents (desktop/ports.py), not widgets."""
    owned = owned_widgets(ROOT)
    found = {
        str(path.relative_to(ROOT)): reaches_for_widgets(
            path.read_text(encoding="utf-8"), owned, _module_name(ROOT, path)
        )
        for path in desk_modules(ROOT)
    }
    assert {desk: reach for desk, reach in found.items() if reach} == {}


def test_each_widget_of_the_window_has_one_writer():
    writers = widget_writers(ROOT, owned_widgets(ROOT))
    assert {widget: mods for widget, mods in writers.items() if not mods <= WINDOW_MODULES} == {}


SYNTHETIC = Owned(
    {"composer": "Composer", "banner": "Banner", "setup_banner": "Banner", "hint": "QLabel"},
    {"Composer": "Composer", "Banner": "Banner", "ErrorBanner": "Banner"},
    frozenset(("desktop.widgets.composer", "desktop.widgets.banner")),
)


@pytest.mark.parametrize(
    "text",
    [
        "from desktop.widgets.banner import Banner\n",
        "from desktop.widgets import banner\n",
        "import desktop.widgets.composer\n",
        "from .widgets.banner import KIND_TITLES\n",
        "from desktop.main_window import Composer\n",  # the class, through the window
        "from desktop.main_window import MainWindow\n",
        "def __init__(self, composer: Composer) -> None: ...\n",
        "def __init__(self, *, box: 'Composer | None' = None) -> None: ...\n",
        "if isinstance(w, ErrorBanner): pass\n",
        "anything.composer.set_text('x')\n",
        "self.ui.composer.setPlainText('x')\n",
        "Drafts(self.desk.composer)\n",
        "shown = [w.setup_banner]\n",
        "getattr(w, 'composer').submit()\n",
        "self.hint = hint\nself.hint.setText('x')\n",  # handed the window's, not made here
    ],
)
def test_a_desk_reaching_for_a_widget_is_found(text: str):
    assert reaches_for_widgets(text, SYNTHETIC) != [], text


@pytest.mark.parametrize(
    "text",
    [
        "from desktop.ports import NavigatorWindow\n",
        "window.show_error('startup', 'No model')\nwindow.put_draft('')\n",
        "window.closing.connect(self.save)\nwindow.as_widget().resize(1, 2)\n",
        "self.hint = QLabel('x')\nself.hint.setText('y')\n",  # a dialog's own hint
        "rows = list(session.transcript())\n",
        "header = table.horizontalHeader()\nheader.setSectionResizeMode(0)\n",
    ],
)
def test_what_a_desk_may_do_is_not_found(text: str):
    assert reaches_for_widgets(text, SYNTHETIC) == [], text


def test_the_window_builder_alone_may_import_the_window():
    text = "from desktop.main_window import MainWindow\n"
    assert reaches_for_widgets(text, SYNTHETIC, "desktop.app") == []


def test_a_second_writer_of_a_widget_is_found(tmp_path: Path):
    window = (
        "from desktop.widgets.composer import Composer\n"
        "from desktop.widgets.banner import Banner\n"
        "from PySide6.QtWidgets import QLabel\n"
        "class MainWindow:\n"
        "    def __init__(self):\n"
        "        self.composer = Composer()\n"
        "        self.banner = Banner()\n"
        "        self.hint = QLabel('x')\n"
        "        self.composer.setFocus()\n"
        "        self.banner.hide()\n"
        "        self.hint.setText('y')\n"
    )
    widgets = {
        "desktop/widgets/composer.py": "class Composer:\n    pass\n",
        "desktop/widgets/banner.py": "class Banner:\n    pass\nErrorBanner = Banner\n",
    }
    root = _tree(tmp_path / "one", {WINDOW: window, **widgets})
    owned = owned_widgets(root)
    assert owned.attributes == {"composer": "Composer", "banner": "Banner", "hint": "QLabel"}
    assert owned.classes == {"Composer": "Composer", "Banner": "Banner", "ErrorBanner": "Banner"}
    assert widget_writers(root, owned) == {name: {WINDOW} for name in owned.attributes}
    desks = {
        "desktop/a.py": "def f(ui):\n    ui.composer.take_text()\n",
        "desktop/b.py": "def f(w):\n    box = w.composer\n    box.setPlainText('x')\n",
        "desktop/c.py": "def f(b: 'ErrorBanner'):\n    b.show_error('x', 'y')\n",
        "desktop/d.py": "class D:\n    def __init__(self):\n        self.hint = QLabel()\n"
        "        self.hint.setText('mine')\n",
    }
    root = _tree(tmp_path / "two", {WINDOW: window, **widgets, **desks})
    assert widget_writers(root, owned_widgets(root)) == {
        "composer": {WINDOW, "desktop/a.py", "desktop/b.py"},
        "banner": {WINDOW, "desktop/c.py"},
        "hint": {WINDOW},
    }


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

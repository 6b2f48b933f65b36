"""The shape of the house: no import circle among the engine's modules, no module too long
to read in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600
ROOMS = ("engine", "desktop", "launcher", "bench", "tests", "resources", "packaging")


def _modules(root: Path, room: str) -> dict[str, Path]:
    found = {}
    for path in sorted((root / room).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the tree a dotted import name lands in (a name imported from a
    package lands in the package), or None outside the tree."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node Python may run: an `if TYPE_CHECKING:` block is for the type checker only
    (its `else` runs)."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _packages_run_first(target: str, importer: str, modules: dict[str, Path]) -> set[str]:
    """The packages whose `__init__` Python runs before it can import `target`: each package
    above it, except those the importer sits in (those are already running or ran)."""
    found = set()
    parts = target.split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        inside = importer == package or importer.startswith(package + ".")
        if package in modules and not inside:
            found.add(package)
    return found


def import_graph(root: Path, room: str) -> dict[str, set[str]]:
    """Each module of `room` and the modules of `room` it imports, function-local imports
    included, and the packages whose `__init__` an import runs on the way."""
    modules = _modules(root, room)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _run_time_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                found = _resolve(target, modules)
                if found is not None and found != name:
                    edges.add(found)
                    edges |= _packages_run_first(found, name, modules)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def too_long(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root)}: {lines} lines"
        for room in ROOMS
        if (root / room).is_dir()
        for path in sorted((root / room).rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]


def test_no_import_circle_among_the_engines_modules():
    assert circles(import_graph(ROOT, "engine")) == []


def test_no_module_is_longer_than_600_lines():
    assert too_long(ROOT) == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_circle_is_found_through_a_function_local_import_and_a_package(tmp_path):
    looped = _tree(
        tmp_path / "looped",
        {
            "engine/__init__.py": "",
            "engine/a.py": "from engine.b import thing\n",
            "engine/b.py": "def thing():\n    from engine.c import other\n",
            "engine/c/__init__.py": "from .inner import other\n",
            "engine/c/inner.py": "import engine.a\n",
        },
    )
    assert circles(import_graph(looped, "engine")) == [
        ["engine.a", "engine.b", "engine.c", "engine.c.inner"]
    ]
    straight = _tree(
        tmp_path / "straight",
        {
            "engine/__init__.py": "",
            "engine/a.py": "from engine.b import thing\nimport json\n",
            "engine/b.py": "from engine.c import other\n",
            "engine/c.py": "other = 1\n",
        },
    )
    assert circles(import_graph(straight, "engine")) == []


def test_a_module_over_the_limit_is_named(tmp_path):
    root = _tree(tmp_path, {"engine/long.py": "x = 1\n" * 601, "engine/ok.py": "x = 1\n" * 600})
    assert too_long(root) == ["engine/long.py: 601 lines"]


def test_a_circle_that_runs_only_through_a_package_init_is_found(tmp_path):
    # engine.a imports engine.c.inner, which needs nothing; but importing it runs
    # engine/c/__init__.py first, and that imports engine.a back.
    through_init = _tree(
        tmp_path / "through_init",
        {
            "engine/__init__.py": "",
            "engine/a.py": "from engine.c.inner import other\n",
            "engine/c/__init__.py": "from engine.d import thing\n",
            "engine/c/inner.py": "other = 1\n",
            "engine/d.py": "from engine.a import other as thing\n",
        },
    )
    assert circles(import_graph(through_init, "engine")) == [["engine.a", "engine.c", "engine.d"]]
    # a module importing its own package's siblings through the package is no circle
    own_package = _tree(
        tmp_path / "own_package",
        {
            "engine/__init__.py": "",
            "engine/c/__init__.py": "from engine.c.inner import other\n",
            "engine/c/inner.py": "from engine.c.base import one\nother = one\n",
            "engine/c/base.py": "one = 1\n",
        },
    )
    assert circles(import_graph(own_package, "engine")) == []

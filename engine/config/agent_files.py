"""Agent files: one TOML file per agent, read strictly and rewritten gently.

Layout (every key optional except `name`; an absent key takes the schema's default):

    name = "coder"
    provider = "ollama"              # embedded | ollama | llamacpp | vllm | sglang
    base_url = "http://127.0.0.1:11434"
    model = "qwen2.5-coder:7b"       # for embedded: a GGUF path, or empty for the default
    n_threads = 8                    # embedded only
    num_ctx = 16384                  # pin the window
    max_context_tokens = 32768       # ceiling; only ever lowers the window
    summarizer_model = "qwen2.5:3b"
    compaction_ratio = 0.8           # or compaction_reserve_tokens = 16384 (wins)
    max_iterations = 50
    max_tokens = 4096                # output cap per response
    temperature = 0.2                # sampling: also top_p, top_k, min_p, repeat_penalty, seed
    system_prompt = \"\"\"...\"\"\"

    [budget]
    max_tokens = 128000              # token-spend ceiling per run; 0 disables

Reading is strict: an unknown key is an error that names it (a typo such as `num_cxt` must
not silently leave the window unpinned), and so is a value of the wrong type; a quoted
number is not guessed at. Writing is gentle: `save_agent` edits the user's file in place
with tomlkit, rewriting only the keys whose values changed, so comments and layout survive,
and refuses to overwrite a file someone else changed since it was loaded.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions
from tomlkit.items import Comment, Null, Table, Whitespace

from engine.atomic import atomic_write_text, file_lock
from engine.config.agent import AgentConfig
from engine.config.errors import AgentConfigError, AgentFileChanged, DuplicateAgentName, Problem
from engine.config.field_spec import FieldProblem, FieldSpec, suggest_key
from engine.config.mcp_servers import McpServer
from engine.config.sampling_fields import drop_old_written_defaults
from engine.config.schema import AGENT_FIELDS, FIELDS_BY_KEY, TABLES
from engine.paths import BrimPaths, safe_component
from engine.resources import default_agent_file

AGENT_SUFFIX = ".toml"
_TOML_POSITION = re.compile(r"^(?P<msg>.*?)\s*\(at line (?P<line>\d+), column (?P<col>\d+)\)$")
_TOP_KEYS = [".".join(spec.path) for spec in AGENT_FIELDS if len(spec.path) == 1]
_ALL_KEYS = [spec.toml_key for spec in AGENT_FIELDS]


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _read(path: Path) -> tuple[bytes, int]:
    """The file's bytes and its mtime as of before the read (so a write during the read is
    seen as a change on save, never missed)."""
    try:
        with open(path, "rb") as handle:
            mtime_ns = os.fstat(handle.fileno()).st_mtime_ns
            return handle.read(), mtime_ns
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise AgentConfigError(path, [Problem(None, f"cannot read the file: {reason}")]) from None


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AgentConfigError(
            path,
            [Problem(None, f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})")],
        ) from None


def _parse_toml(path: Path | str, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        detail = str(exc)
        match = _TOML_POSITION.match(detail)
        if match:
            problem = Problem(
                None,
                f"not valid TOML: {match['msg']}",
                line=int(match["line"]),
                column=int(match["col"]),
            )
        else:
            problem = Problem(None, f"not valid TOML: {detail}")
        raise AgentConfigError(path, [problem]) from None
    except RecursionError:
        raise AgentConfigError(path, [Problem(None, "not valid TOML: nested too deeply")]) from None


def _collect(data: dict[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Map a parsed TOML document onto schema fields, validating each value."""
    values: dict[str, Any] = {}
    problems: list[Problem] = []

    def take(spec: FieldSpec, raw: Any) -> None:
        try:
            values[spec.name] = spec.validate(raw)
        except FieldProblem as exc:
            problems.append(Problem(spec.toml_key, str(exc)))

    for key, raw in data.items():
        spec = FIELDS_BY_KEY.get((key,))
        if spec is not None:
            take(spec, raw)
        elif key in TABLES:
            if not isinstance(raw, dict):
                inner = [k.split(".", 1)[1] for k in _ALL_KEYS if k.startswith(key + ".")]
                problems.append(Problem(key, f"must be a table ([{key}] with {', '.join(inner)})"))
                continue
            for sub, sub_raw in raw.items():
                sub_spec = FIELDS_BY_KEY.get((key, sub))
                if sub_spec is not None:
                    take(sub_spec, sub_raw)
                else:
                    dotted = f"{key}.{sub}"
                    problems.append(Problem(dotted, "unknown key" + suggest_key(dotted, _ALL_KEYS)))
        else:
            problems.append(Problem(key, _unknown_key_message(key, raw)))
    if "name" not in values and not any(p.field == "name" for p in problems):
        problems.insert(0, Problem("name", "missing: every agent file needs a name"))
    return drop_old_written_defaults(values), problems


def _unknown_key_message(key: str, raw: Any) -> str:
    if isinstance(raw, dict) and key == "agent":
        return "unknown table [agent]: Brim agent files put these keys at the top level"
    hint = suggest_key(key, _ALL_KEYS)
    if hint:
        return "unknown key" + hint
    return "unknown key (known keys: " + ", ".join(_ALL_KEYS) + ")"


def parse_agent_text(text: str, source: Path | str = "agent") -> AgentConfig:
    """An agent from TOML text (what `load_agent` does after reading the file)."""
    values, problems = _collect(_parse_toml(source, text))
    if problems:
        raise AgentConfigError(source, problems)
    try:
        return AgentConfig.from_values(values)
    except AgentConfigError as exc:  # pragma: no cover - _collect already validated
        raise AgentConfigError(source, exc.problems) from None


def load_agent(path: Path) -> AgentConfig:
    """Read and validate one agent file. Raises `AgentConfigError` only."""
    path = Path(path)
    data, mtime_ns = _read(path)
    text = _decode(path, data)
    values, problems = _collect(_parse_toml(path, text))
    if problems:
        raise AgentConfigError(path, problems)
    return AgentConfig.from_values(
        values, source_path=path, loaded_mtime_ns=mtime_ns, loaded_digest=_digest(data)
    )


def agent_files(agents_dir: Path) -> list[Path]:
    """The agent files in a folder, in name order (hidden and temporary files skipped)."""
    try:
        entries = list(Path(agents_dir).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(p for p in entries if p.suffix == AGENT_SUFFIX and not p.name.startswith("."))


def load_agents(agents_dir: Path) -> tuple[list[AgentConfig], list[AgentConfigError]]:
    """Every agent in the folder; a broken file is reported and never stops the others.

    Two files claiming the same name: the first (by file name) wins, the second is an error.
    """
    agents: list[AgentConfig] = []
    errors: list[AgentConfigError] = []
    by_name: dict[str, Path] = {}
    for path in agent_files(agents_dir):
        try:
            agent = load_agent(path)
        except AgentConfigError as exc:
            errors.append(exc)
            continue
        first = by_name.get(agent.name)
        if first is not None:
            errors.append(DuplicateAgentName(path, agent.name, first))
            continue
        by_name[agent.name] = path
        agents.append(agent)
    return agents, errors


# --- writing ---------------------------------------------------------------------------


def _toml_value(value: Any) -> Any:
    """A tomlkit item for a value; multi-line text as a readable multi-line string."""
    if isinstance(value, str) and "\n" in value:
        item = tomlkit.string(value, multiline=True)
        try:
            if tomllib.loads(f"x = {item.as_string()}")["x"] == value:
                return item
        except tomllib.TOMLDecodeError:
            pass
        return tomlkit.string(value)
    if isinstance(value, tuple) and all(isinstance(v, McpServer) for v in value):
        return tomlkit.item([server.table() for server in value])  # [[mcp]] tables
    return tomlkit.item(value)


def _comment_lines(spec: FieldSpec) -> list[str]:
    text = spec.description
    if spec.nullable and spec.unset:
        text += f" Unset: {spec.unset}."
    if spec.type == "choice":
        text += " One of: " + ", ".join(spec.choices) + "."
    return [f"# {ln}" for ln in _wrap(text)]


def _wrap(text: str, width: int = 86) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return lines


def _assignment(key: str, value: Any) -> str:
    doc = tomlkit.document()
    doc[key] = _toml_value(value)
    return tomlkit.dumps(doc).rstrip("\n")


def render_agent(config: AgentConfig) -> str:
    """A new agent file: every setting listed with its description; the ones that differ
    from the default (and name, provider, model) written out, the rest commented out."""
    always = {"name", "provider", "model"}
    out = [
        f"# Brim agent: {config.name}",
        "#",
        "# One agent per file. A commented-out key takes the default shown or described.",
        "# Edit freely: saving from Brim's editor keeps your comments and layout.",
        "",
    ]
    tables: dict[str, list[FieldSpec]] = {}
    for spec in AGENT_FIELDS:
        if len(spec.path) > 1:
            tables.setdefault(spec.path[0], []).append(spec)
            continue
        out.extend(_field_block(spec, config, spec.name in always, spec.path[-1]))
    for table, specs in tables.items():
        set_any = any(getattr(config, s.name) != s.default for s in specs)
        out.append(f"[{table}]" if set_any else f"# [{table}]")
        for spec in specs:
            out.extend(_field_block(spec, config, False, spec.path[-1]))
    return "\n".join(out).rstrip("\n") + "\n"


def _field_block(spec: FieldSpec, config: AgentConfig, always: bool, key: str) -> list[str]:
    value = getattr(config, spec.name)
    lines = _comment_lines(spec)
    if always or value != spec.default:
        lines.append(_assignment(key, value if value is not None else ""))
    else:
        shown = spec.default if spec.default is not None else spec.example
        if shown is None:
            lines.append(f"# {key} = ...")
        elif spec.type == "text":
            lines.append(f'# {key} = """')
            lines.extend(f"# {ln}" for ln in _wrap(str(shown)))
            lines.append('# """')
        else:
            for ln in _assignment(key, shown).splitlines():
                lines.append(f"# {ln}")
    lines.append("")
    return lines


def _lookup(doc: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    node = doc
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _unwrap(value: Any) -> Any:
    return value.unwrap() if hasattr(value, "unwrap") else value


def _only_blank(table: Table) -> bool:
    """No keys and no comments left: safe to remove the table header too."""
    return all(isinstance(item, Whitespace | Null) for _, item in table.value.body)


def _apply(doc: tomlkit.TOMLDocument, config: AgentConfig) -> None:
    """Rewrite only the keys whose value differs from what the file says (or implies)."""
    for spec in AGENT_FIELDS:
        new = getattr(config, spec.name)
        present, raw = _lookup(doc, spec.path)
        if present:
            try:
                old = spec.validate(_unwrap(raw))
            except FieldProblem:
                old = object()  # an invalid value on disk: always rewrite it
        else:
            old = spec.default
        if new == old and type(new) is type(old):
            continue
        *parents, key = spec.path
        container: Any = doc
        if new is None:
            if not present:
                continue
            for part in parents:
                container = container[part]
            del container[key]
            if parents and isinstance(container, Table) and _only_blank(container):
                del doc[parents[0]]
            continue
        for part in parents:
            if part not in container or not isinstance(container[part], dict):
                container[part] = tomlkit.table()
            container = container[part]
        _set_key(container, key, _toml_value(new))


def _set_key(container: Any, key: str, item: Any) -> None:
    """Set a key; a new key goes right below its commented-out example when the file has
    one (as the default agent file does), so uncommenting in the editor reads naturally."""
    if key in container:
        container[key] = item
        return
    inner = container.value if isinstance(container, Table) else container
    body = inner.body
    start = re.compile(rf"^#\s*{re.escape(key)}\s*=\s*(?P<rest>.*)$")
    for index, (k, entry) in enumerate(body):
        if k is not None or not isinstance(entry, Comment):
            continue
        match = start.match(entry.as_string().strip())
        if not match:
            continue
        end = index
        rest = match["rest"].strip()
        if rest[:3] in ('"""', "'''") and rest.count(rest[:3]) == 1:
            for later in range(index + 1, len(body)):
                k2, e2 = body[later]
                if k2 is not None or not isinstance(e2, Comment):
                    break
                end = later
                if rest[:3] in e2.as_string():
                    break
        if end + 1 < len(body):
            try:
                inner._insert_at(end + 1, key, item)
                return
            except Exception:  # private tomlkit API: fall back to a plain append
                break
        break
    container[key] = item


def save_agent(
    path: Path,
    config: AgentConfig,
    *,
    expected_mtime_ns: int | None = None,
    force: bool = False,
) -> AgentConfig:
    """Write `config` to `path`, keeping the file's comments and layout, atomically.

    Conflict detection: the file must still be as it was when loaded — `expected_mtime_ns`
    when given, else the mtime recorded in `config` if it was loaded from this same path.
    A file that changed (or vanished) meanwhile raises `AgentFileChanged` and nothing is
    written; `force=True` overwrites anyway. Returns the config as now saved, carrying the
    new file state, ready for the next save.
    """
    path = Path(path)
    same_file = config.source_path is not None and _same_path(config.source_path, path)
    expected = expected_mtime_ns
    digest = None
    if expected is None and same_file:
        expected, digest = config.loaded_mtime_ns, config.loaded_digest
    with file_lock(path):
        try:
            data, mtime_ns = _read(path)
            exists = True
        except AgentConfigError:
            if path.exists():
                raise
            data, mtime_ns, exists = b"", 0, False
        if expected is not None and not force:
            if not exists:
                raise AgentFileChanged(path, "was deleted since it was loaded")
            if mtime_ns != expected and (digest is None or _digest(data) != digest):
                raise AgentFileChanged(path)
        if exists:
            text = _decode(path, data)
            try:
                doc = tomlkit.parse(text)
            except (tomlkit.exceptions.TOMLKitError, RecursionError) as exc:
                raise AgentConfigError(path, [Problem(None, f"not valid TOML: {exc}")]) from None
            _apply(doc, config)
            new_text = tomlkit.dumps(doc)
            if new_text.endswith("\n\n") and not text.endswith("\n\n"):
                new_text = new_text.rstrip("\n") + "\n"  # a removed table leaves a blank
        else:
            new_text = render_agent(config)
        saved = parse_agent_text(new_text, path)  # never write a file Brim could not load
        if saved.values() != config.values():
            raise AgentConfigError(
                path, [Problem(None, "could not be rewritten faithfully; nothing was saved")]
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, new_text)
        return load_agent(path)


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return a == b


def ensure_default_agent(paths: BrimPaths) -> Path | None:
    """Write the default agent (a commented file, resources/agents/default.toml) when the
    agents folder has no agent file. The shipped file is what `render_agent` writes for
    `default_agent()`; a test keeps the two in step.

    Returns the file written, or None when there already was one."""
    folder = paths.agents_dir
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"default{AGENT_SUFFIX}"
    with file_lock(target):
        if agent_files(folder):
            return None
        atomic_write_text(target, default_agent_file())
    return target


def agent_path(paths: BrimPaths, name: str, taken: Iterable[Path] = ()) -> Path:
    """A file name for a new agent called `name` that does not clash with existing files."""
    stem = safe_component(name.strip().lower().replace(" ", "-")) or "agent"
    existing = {p.name for p in taken} | {p.name for p in agent_files(paths.agents_dir)}
    candidate, n = f"{stem}{AGENT_SUFFIX}", 2
    while candidate in existing:
        candidate, n = f"{stem}-{n}{AGENT_SUFFIX}", n + 1
    return paths.agents_dir / candidate

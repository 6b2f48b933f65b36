"""The files under resources/: every one the code names is there and loads, the prompts the
summarizer and the memory extractor are sent are those files, and the install and the
bundle carry them."""

from __future__ import annotations

import ast
import asyncio
import string
import tomllib
from pathlib import Path

import pytest

from engine.config import default_agent, ensure_default_agent, parse_agent_text, render_agent
from engine.config.schema import DEFAULT_SYSTEM_PROMPT
from engine.context.budget import summary_max_tokens
from engine.context.compaction import compact
from engine.context.constants import SUMMARY_HEADINGS
from engine.context.guided import GUIDED_QUESTIONS, REPLAY_QUESTION
from engine.context.replay import Replay
from engine.context.summarizer import REPLAY_MARK, REPLAY_QUESTION_MARK
from engine.memory import Completion, MemoryService, ScanInput, run_scan
from engine.memory.replayed_scan import MEMORY_REPLAY_MARK, replay_instruction
from engine.messages import Message, alternating, assistant, system, user
from engine.paths import BrimPaths
from engine.resources import (
    ResourceMissing,
    default_agent_file,
    prompt,
    prompt_table,
    resource_bytes,
)
from tests.engine.context.histories import FakeSummarizer, Ids, count, cycle, pinned

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
WINDOW = 8_000
# The loaders the code calls with a resource name, and where that name points.
LOADERS = {
    "prompt": "prompts/{}.txt",
    "load_prompt": "prompts/{}.txt",
    "prompt_table": "prompts/{}.toml",
    "style_sheet": "style/{}.qss",
}


def _named_resources() -> set[tuple[str, str]]:
    """Every `prompt("name")` (or `prompt_table`, `style_sheet`) call in engine/ and desktop/."""
    named: set[tuple[str, str]] = set()
    for path in [*ROOT.joinpath("engine").rglob("*.py"), *ROOT.joinpath("desktop").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            loader = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            first = node.args[0]
            if loader in LOADERS and isinstance(first, ast.Constant):
                named.add((loader, first.value))
    return named


def test_every_resource_the_code_names_is_a_shipped_file_that_loads():
    from desktop import theme

    named = _named_resources()
    assert ("prompt", "checkpoint_system") in named  # the walk sees the calls at all
    assert ("style_sheet", "app") in named
    for loader, name in sorted(named):
        assert (RESOURCES / LOADERS[loader].format(name)).is_file(), name
        if loader == "style_sheet":
            assert "${" not in theme.style_sheet(name), name
        elif loader == "prompt_table":
            assert prompt_table(name), name
        else:
            assert prompt(name), name


def test_every_shipped_prompt_and_style_sheet_is_named_by_the_code():
    named = {LOADERS[loader].format(name) for loader, name in _named_resources()}
    shipped = {
        str(p.relative_to(RESOURCES))
        for folder in ("prompts", "style")
        for p in (RESOURCES / folder).iterdir()
    }
    assert shipped == named


def test_a_missing_resource_is_an_error_that_names_the_file():
    with pytest.raises(ResourceMissing, match=r"prompts/no_such_prompt\.txt.*reinstall"):
        prompt("no_such_prompt")
    assert resource_bytes("icons", "io.brim.Brim.svg").startswith(b"<")


def test_the_prompts_keep_their_placeholders_and_marks():
    headings = "\n".join(SUMMARY_HEADINGS)
    assert "{headings}" in prompt("checkpoint_system") and "{words}" in prompt("checkpoint_system")
    replayed = prompt("checkpoint_replay")
    assert replayed.format(headings=headings, words=100, around="").startswith(REPLAY_MARK)
    assert "{around}" in replayed  # "nothing before or after", or "before them" with a rider
    assert prompt("memory_extractor_rider").format(memory="").startswith(MEMORY_REPLAY_MARK)
    assert REPLAY_QUESTION.startswith(REPLAY_QUESTION_MARK) and REPLAY_QUESTION.endswith(" ")
    assert [section for section, _ in GUIDED_QUESTIONS] == [
        "Goal",
        "Constraints & Preferences",
        "Key Decisions",
        "Next Steps",
        "Critical Context",
    ]
    for name in ("memory_extractor", "memory_curator"):
        filled = prompt(name).format(actor="memory-extractor")
        assert "memory-extractor" in filled and "{{" not in filled and '{"' in filled
    replayed = replay_instruction("memory-extractor", "[global] global/ (1 entries)")
    assert replayed.startswith(MEMORY_REPLAY_MARK) and "memory-extractor" in replayed
    assert "{{" not in replayed and '{"memories"' in replayed and "(1 entries)" in replayed
    assert "Already in memory" not in replay_instruction("memory-extractor")


def _history() -> list[Message]:
    ids = Ids()
    msgs = [system("You are Brim."), pinned(), user("audit the repo")]
    for _ in range(12):
        msgs.extend(cycle(ids, 2_000))
    msgs.append(assistant("halfway"))
    return msgs


def _words() -> int:
    return max(100, int(summary_max_tokens(WINDOW) * 0.6))


def test_the_summarizer_is_sent_the_checkpoint_prompt_from_resources():
    fake = FakeSummarizer()
    result = asyncio.run(compact(_history(), window=WINDOW, count_message=count, summarize=fake))
    assert result.ok
    expected = prompt("checkpoint_system").format(
        headings="\n".join(SUMMARY_HEADINGS), words=_words()
    )
    assert fake.requests[0].messages[0].content == expected
    (continuation,) = [m for m in result.messages if m.kind == "continuation"]
    assert continuation.content == prompt("continuation")


def test_a_replayed_compaction_ends_with_the_replay_prompt_from_resources():
    msgs = _history()
    sent = tuple(alternating(msgs[:-1]))
    replay = Replay(sent, (), sum(map(count, sent)), at=msgs[-1].created)
    fake = FakeSummarizer()
    result = asyncio.run(
        compact(msgs, window=WINDOW, count_message=count, summarize=fake, replay=replay)
    )
    assert result.ok
    expected = prompt("checkpoint_replay").format(
        headings="\n".join(SUMMARY_HEADINGS), words=_words(), around="nothing before or after"
    )
    assert fake.requests[0].messages[-1].content.startswith(expected)


def test_the_guided_questions_are_sent_as_the_resources_say():
    fake = FakeSummarizer(text="Noted.")  # not a checkpoint: the guided questions follow
    asyncio.run(compact(_history(), window=WINDOW, count_message=count, summarize=fake))
    guided = fake.requests[1:]
    assert len(guided) == len(GUIDED_QUESTIONS)
    assert all(r.messages[0].content == prompt("guided_system") for r in guided)
    for request, (_, question) in zip(guided, GUIDED_QUESTIONS, strict=True):
        assert request.messages[-1].content.endswith(f"\n\n{question}")
    table = prompt_table("guided_questions")
    assert [q["question"] for q in table["questions"]] == [q for _, q in GUIDED_QUESTIONS]


def test_the_memory_extractor_is_sent_its_prompt_from_resources(tmp_path: Path):
    service = MemoryService(tmp_path / "memory")
    sent: list[list[Message]] = []

    async def model(messages: list[Message], tools: list[dict], max_tokens: int) -> Completion:
        sent.append(list(messages))
        return Completion('{"memories": [], "lessons": []}')

    inp = ScanInput("conv", [user("I always want commit messages in the imperative mood.")])
    asyncio.run(
        run_scan(
            inp,
            service=service,
            scopes=service.scopes("default", None),
            complete=model,
            count_text=lambda text: len(text.split()),
            window=4096,
        )
    )
    assert sent[0][0].content == prompt("memory_extractor").format(actor="memory-extractor")


def test_the_shipped_default_agent_file_is_what_the_schema_renders(tmp_path: Path):
    """When a setting is added or described differently, regenerate the file with
    `python -c "from engine.config import render_agent, default_agent;
    open('resources/agents/default.toml', 'w').write(render_agent(default_agent()))"`."""
    assert default_agent_file() == render_agent(default_agent())
    assert parse_agent_text(default_agent_file()).values() == default_agent().values()
    assert prompt("system") == DEFAULT_SYSTEM_PROMPT
    paths = BrimPaths.under(tmp_path)
    written = ensure_default_agent(paths)
    assert written is not None and written.read_text(encoding="utf-8") == default_agent_file()


def test_the_style_sheets_fill_every_placeholder_from_the_theme():
    from desktop import theme

    for path in sorted((RESOURCES / "style").glob("*.qss")):
        template = path.read_text(encoding="utf-8")
        names = {m[1] or m[2] for m in string.Template.pattern.findall(template) if m[1] or m[2]}
        assert names and all(isinstance(getattr(theme, n), str) for n in names), path.name
    assert "${" not in theme.STYLE_SHEET and theme.WINDOW_BG in theme.STYLE_SHEET
    with pytest.raises(RuntimeError, match=r"style/no_such_sheet\.qss is missing"):
        theme.style_sheet("no_such_sheet")


def _shipped_suffixes() -> set[str]:
    return {
        p.suffix
        for p in RESOURCES.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and not p.name.startswith(".")
    }


def test_the_install_and_the_bundle_carry_every_kind_of_shipped_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    assert "resources*" in setuptools["packages"]["find"]["include"]  # its folders too
    patterns = setuptools["package-data"]["resources"]
    assert {f"**/*{suffix}" for suffix in _shipped_suffixes()} <= set(patterns)
    spec = (ROOT / "packaging" / "brim.spec").read_text(encoding="utf-8")
    assert all(f'"{suffix}"' in spec for suffix in _shipped_suffixes())
    assert '"resources"' in spec  # a hidden import: the package is only named as a string

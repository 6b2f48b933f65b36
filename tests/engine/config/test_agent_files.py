"""Agent files: read strictly with messages a person can act on, rewritten without losing
their comments, and never overwriting someone else's edit."""

import os
import subprocess
import sys
import textwrap

import pytest

from engine.config import (
    AgentConfig,
    AgentConfigError,
    AgentFileChanged,
    default_agent,
    ensure_default_agent,
    load_agent,
    load_agents,
    render_agent,
    save_agent,
)
from engine.paths import BrimPaths


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def agents(tmp_path):
    return tmp_path / "agents"


CODER = """
# The coding agent
name = "coder"          # shown in the sidebar
provider = "ollama"
model = "qwen2.5-coder:7b"
num_ctx = 16384         # pinned: Ollama gets it on every request

# keep runs short
max_iterations = 40

[budget]
# per run
max_tokens = 100000     # spend cap
"""


# --- loading ---------------------------------------------------------------------------


def test_a_complete_agent_file_loads_every_setting(agents):
    path = write(
        agents / "full.toml",
        '''
        name = "full"
        provider = "vllm"
        base_url = "http://gpu-box:8000"
        api_key_env = "GPU_BOX_KEY"
        request_timeout_s = 30.0
        model = "Qwen/Qwen2.5-7B-Instruct"
        num_ctx = 32768
        on_spill = "shrink"
        max_context_tokens = 24000
        summarizer_model = "small"
        compaction_ratio = 0.7
        compaction_reserve_tokens = 4000
        max_iterations = 12
        max_tokens = 2048
        reasoning = "low"
        temperature = 0.3
        top_p = 0.8
        top_k = 20
        min_p = 0.1
        repeat_penalty = 1.05
        seed = 7
        n_threads = 4
        gpu_layers = 20
        flash_attn = "on"
        kv_cache_type = "q8_0"
        system_prompt = """
        Be brief.
        Cite files."""
        [budget]
        max_tokens = 0
        ''',
    )
    config = load_agent(path)
    assert config.values() == {
        "name": "full",
        "provider": "vllm",
        "base_url": "http://gpu-box:8000",
        "api_key_env": "GPU_BOX_KEY",
        "api_key": None,
        "request_timeout_s": 30.0,
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "n_threads": 4,
        "gpu_layers": 20,
        "flash_attn": "on",
        "kv_cache_type": "q8_0",
        "num_ctx": 32768,
        "on_spill": "shrink",
        "max_context_tokens": 24000,
        "summarizer_model": "small",
        "compaction_ratio": 0.7,
        "compaction_reserve_tokens": 4000,
        "max_iterations": 12,
        "max_tokens": 2048,
        "reasoning": "low",
        "temperature": 0.3,
        "top_p": 0.8,
        "top_k": 20,
        "min_p": 0.1,
        "repeat_penalty": 1.05,
        "seed": 7,
        "budget_max_tokens": 0,
        "system_prompt": "Be brief.\nCite files.",
        "mcp": (),
    }
    assert config.source_path == path
    assert config.loaded_mtime_ns == path.stat().st_mtime_ns


def test_a_minimal_file_takes_the_defaults(agents):
    config = load_agent(write(agents / "m.toml", 'name = "m"'))
    assert config == AgentConfig(name="m")
    assert config.provider == "embedded" and config.compaction_ratio == 0.8


def test_the_budget_may_be_written_as_a_dotted_key(agents):
    config = load_agent(write(agents / "b.toml", 'name = "b"\nbudget.max_tokens = 5000\n'))
    assert config.budget_max_tokens == 5000


def test_a_bad_value_names_the_file_the_field_and_the_problem(agents):
    path = write(agents / "coder.toml", 'name = "coder"\nnum_ctx = "big"\n')
    with pytest.raises(AgentConfigError) as caught:
        load_agent(path)
    assert str(caught.value) == f"{path}: num_ctx: must be an integer ≥ 256, got 'big'"
    assert caught.value.path == path
    assert (caught.value.field, caught.value.problem) == (
        "num_ctx",
        "must be an integer ≥ 256, got 'big'",
    )


def test_every_problem_in_a_file_is_reported_at_once(agents):
    path = write(
        agents / "x.toml",
        """
        name = "x"
        provider = "olama"
        compaction_ratio = 2
        """,
    )
    with pytest.raises(AgentConfigError) as caught:
        load_agent(path)
    assert [p.field for p in caught.value.problems] == ["provider", "compaction_ratio"]
    assert "did you mean 'ollama'?" in str(caught.value)


def test_malformed_toml_gives_the_line_and_column(agents):
    path = write(agents / "bad.toml", 'name = "bad"\nnum_ctx = \nmodel = "m"\n')
    with pytest.raises(AgentConfigError) as caught:
        load_agent(path)
    assert (caught.value.line, caught.value.column) == (2, 11)
    assert str(caught.value).startswith(f"{path}: line 2, column 11: not valid TOML")


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ('name = "t"\nnum_cxt = 8192\n', "num_cxt", "unknown key (did you mean 'num_ctx'?)"),
        ('name = "t"\nzzz = 1\n', "zzz", "unknown key (known keys: name, provider"),
        ('name = "t"\n[budget]\nmax_token = 1\n', "budget.max_token", "did you mean"),
        ('name = "t"\n[agent]\nnum_ctx = 8192\n', "agent", "put these keys at the top level"),
        ('name = "t"\nbudget = 5\n', "budget", "must be a table ([budget] with max_tokens)"),
        ("provider = 'ollama'\n", "name", "missing: every agent file needs a name"),
    ],
)
def test_typos_and_misplaced_keys_do_not_pass_silently(agents, text, field, expected):
    with pytest.raises(AgentConfigError) as caught:
        load_agent(write(agents / "t.toml", text))
    assert caught.value.field == field
    assert expected in caught.value.problem


def test_a_missing_or_binary_file_is_an_agent_error_not_a_crash(agents):
    with pytest.raises(AgentConfigError, match="cannot read the file"):
        load_agent(agents / "nope.toml")
    binary = agents / "bin.toml"
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_bytes(b'name = "\xff\xfe"\n')
    with pytest.raises(AgentConfigError, match=r"not UTF-8 text \(byte 0xff at offset 8\)"):
        load_agent(binary)


def test_a_file_saved_with_a_byte_order_mark_loads(agents):
    path = agents / "bom.toml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\xef\xbb\xbfname = "bom"\n')
    assert load_agent(path).name == "bom"


def test_a_broken_agent_file_never_stops_the_others_from_loading(agents):
    write(agents / "a.toml", 'name = "a"')
    write(agents / "b.toml", "name = ")
    write(agents / "c.toml", 'name = "c"\nnum_ctx = 1')
    write(agents / "d.toml", 'name = "d"\nprovider = "llamacpp"')
    write(agents / "notes.txt", "not an agent")
    write(agents / ".d.toml.1234.tmp", "half written")
    write(agents / ".hidden.toml", "name = 'hidden'")
    loaded, errors = load_agents(agents)
    assert [a.name for a in loaded] == ["a", "d"]
    assert [e.path.name for e in errors] == ["b.toml", "c.toml"]


def test_two_files_claiming_one_name_keep_the_first(agents):
    write(agents / "a.toml", 'name = "same"\nmodel = "first"')
    write(agents / "b.toml", 'name = "same"\nmodel = "second"')
    loaded, errors = load_agents(agents)
    assert [a.model for a in loaded] == ["first"]
    assert "'same' is already used by a.toml" in str(errors[0])


def test_a_missing_agents_folder_is_simply_empty(tmp_path):
    assert load_agents(tmp_path / "none") == ([], [])


# --- the default agent -----------------------------------------------------------------


def test_a_fresh_install_gets_a_commented_default_agent_that_loads_back(tmp_path):
    paths = BrimPaths.resolve(tmp_path, env={})
    written = ensure_default_agent(paths)
    assert written == paths.agents_dir / "default.toml"
    text = written.read_text()
    assert "# Pin the context window." in text and "# num_ctx = 8192" in text
    assert load_agent(written) == default_agent()
    assert default_agent().provider == "embedded" and default_agent().model == ""


def test_the_default_agent_is_not_written_when_any_agent_file_exists(tmp_path):
    paths = BrimPaths.resolve(tmp_path, env={})
    write(paths.agents_dir / "mine.toml", "this is broken")
    assert ensure_default_agent(paths) is None
    assert sorted(p.name for p in paths.agents_dir.glob("*.toml")) == ["mine.toml"]


def test_a_rendered_agent_loads_back_equal_for_non_default_values(tmp_path):
    config = AgentConfig(
        name="r",
        provider="ollama",
        num_ctx=8192,
        budget_max_tokens=0,
        system_prompt='Line one\nwith """ quotes\n',
    )
    path = tmp_path / "r.toml"
    path.write_text(render_agent(config))
    assert load_agent(path) == config


# --- saving ----------------------------------------------------------------------------


def test_saving_a_change_keeps_comments_layout_and_untouched_keys(agents):
    path = write(agents / "coder.toml", CODER)
    config = load_agent(path)
    saved = save_agent(path, config.with_changes(num_ctx=32768, temperature=0.3))
    text = path.read_text()
    assert text == textwrap.dedent(CODER).lstrip("\n").replace(
        "num_ctx = 16384 ", "num_ctx = 32768 "
    ).replace("max_iterations = 40\n", "max_iterations = 40\ntemperature = 0.3\n")
    assert saved.num_ctx == 32768 and saved.loaded_mtime_ns == path.stat().st_mtime_ns


def test_saving_an_unchanged_agent_leaves_the_file_byte_identical(agents):
    path = write(agents / "coder.toml", CODER)
    before = path.read_bytes()
    save_agent(path, load_agent(path))
    assert path.read_bytes() == before


def test_a_setting_set_to_none_is_removed_from_the_file(agents):
    path = write(agents / "coder.toml", CODER)
    save_agent(path, load_agent(path).with_changes(num_ctx=None, budget_max_tokens=None))
    text = path.read_text()
    assert "num_ctx =" not in text and "max_tokens" not in text
    assert "# per run" in text  # the table keeps its comment, so it stays
    reloaded = load_agent(path)
    assert reloaded.num_ctx is None and reloaded.budget_max_tokens is None


def test_a_budget_table_is_created_when_first_set(agents):
    path = write(agents / "m.toml", 'name = "m"\n')
    save_agent(path, load_agent(path).with_changes(budget_max_tokens=5000))
    assert "[budget]\nmax_tokens = 5000\n" in path.read_text()
    save_agent(path, load_agent(path).with_changes(budget_max_tokens=None))
    assert path.read_text() == 'name = "m"\n'


def test_a_pin_set_in_the_default_file_lands_under_its_commented_example(tmp_path):
    paths = BrimPaths.resolve(tmp_path, env={})
    path = ensure_default_agent(paths)
    assert path is not None
    save_agent(path, load_agent(path).with_changes(num_ctx=4096))
    assert "# num_ctx = 8192\nnum_ctx = 4096\n" in path.read_text()


def test_a_multi_line_system_prompt_round_trips_through_a_save(agents):
    path = write(agents / "p.toml", 'name = "p"\n')
    prompt = 'First line.\n\n  Indented "quoted" \'\'\' and """ and a \\ backslash\n'
    save_agent(path, load_agent(path).with_changes(system_prompt=prompt))
    assert load_agent(path).system_prompt == prompt


def test_saving_to_a_new_path_writes_a_complete_commented_file(agents):
    config = AgentConfig(name="new", provider="llamacpp", num_ctx=4096)
    saved = save_agent(agents / "new.toml", config)
    assert saved == config and saved.source_path == agents / "new.toml"
    assert "# Where the engine listens." in (agents / "new.toml").read_text()


def test_an_edit_by_another_process_is_detected_and_not_overwritten(agents):
    path = write(agents / "coder.toml", CODER)
    config = load_agent(path)
    other = (
        "from pathlib import Path\n"
        f"p = Path({str(path)!r})\n"
        "p.write_text(p.read_text().replace('qwen2.5-coder:7b', 'llama3'))\n"
    )
    subprocess.run([sys.executable, "-c", other], check=True)
    os.utime(path, ns=(config.loaded_mtime_ns + 1, config.loaded_mtime_ns + 1))
    with pytest.raises(AgentFileChanged) as caught:
        save_agent(path, config.with_changes(num_ctx=4096))
    assert str(path) in str(caught.value)
    assert 'model = "llama3"' in path.read_text() and "16384" in path.read_text()
    # reloading picks up their edit, and then saving works
    save_agent(path, load_agent(path).with_changes(num_ctx=4096))
    assert load_agent(path).values()["model"] == "llama3"


def test_an_explicit_expected_mtime_is_checked(agents):
    path = write(agents / "coder.toml", CODER)
    config = load_agent(path)
    with pytest.raises(AgentFileChanged):
        save_agent(path, config, expected_mtime_ns=config.loaded_mtime_ns - 1)
    save_agent(path, config, expected_mtime_ns=config.loaded_mtime_ns)


def test_a_file_only_touched_since_loading_is_not_a_conflict(agents):
    path = write(agents / "coder.toml", CODER)
    config = load_agent(path)
    os.utime(path, ns=(config.loaded_mtime_ns + 10**9, config.loaded_mtime_ns + 10**9))
    assert save_agent(path, config.with_changes(num_ctx=4096)).num_ctx == 4096


def test_a_file_deleted_since_loading_is_a_conflict_unless_forced(agents):
    path = write(agents / "coder.toml", CODER)
    config = load_agent(path)
    path.unlink()
    with pytest.raises(AgentFileChanged, match="was deleted"):
        save_agent(path, config)
    assert not path.exists()
    assert save_agent(path, config, force=True) == config


def test_forcing_a_save_over_a_changed_file_rewrites_it(agents):
    path = write(agents / "coder.toml", CODER)
    config = load_agent(path)
    path.write_text(path.read_text().replace("40", "41"))
    os.utime(path, ns=(config.loaded_mtime_ns + 1, config.loaded_mtime_ns + 1))
    save_agent(path, config, force=True)
    assert load_agent(path).max_iterations == 40
    assert "# keep runs short" in path.read_text()


def test_a_value_nested_thousands_deep_is_refused_not_a_crash(agents):
    path = write(agents / "deep.toml", 'name = "d"\nmodel = ' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(AgentConfigError, match="nested too deeply"):
        load_agent(path)

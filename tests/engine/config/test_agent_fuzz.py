"""Whatever is in an agent file, loading it yields a valid agent or an AgentConfigError,
and whatever valid agent is saved, it loads back equal with the file's comments kept."""

import string
import tempfile
import textwrap
from datetime import datetime
from pathlib import Path

import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.config import AGENT_FIELDS, AgentConfig, AgentConfigError, load_agent, save_agent
from engine.config.field_spec import FieldSpec

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYS = [spec.path[-1] for spec in AGENT_FIELDS] + ["num_cxt", "agent", "budget", "x.y", ""]

toml_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
    st.sampled_from(["ollama", "embedded", "http://127.0.0.1:1", "", " ", "default"]),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=6,
)


def check_loads_or_refuses(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "agent.toml"
        path.write_bytes(data)
        try:
            config = load_agent(path)
        except AgentConfigError as exc:
            assert str(exc).startswith(str(path))
            assert exc.problems
        else:
            assert isinstance(config, AgentConfig)
            assert AgentConfig.from_values(config.values()) == config


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes_load_or_are_refused_cleanly(data):
    check_loads_or_refuses(data)


@FUZZ
@given(st.text(alphabet=string.printable + "\"'[]={}.#\n\t é✓\\", max_size=200))
def test_arbitrary_text_loads_or_is_refused_cleanly(text):
    check_loads_or_refuses(text.encode())


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), toml_values, max_size=8))
def test_well_formed_toml_with_arbitrary_keys_and_values_loads_or_is_refused(table):
    try:
        text = tomlkit.dumps(table)
    except Exception:
        assume(False)
    check_loads_or_refuses(text.encode())


VALID = textwrap.dedent(
    """\
    # a comment
    name = "v"   # inline
    provider = "ollama"
    num_ctx = 8192
    system_prompt = \"\"\"
    multi
    line\"\"\"
    [budget]
    max_tokens = 1000
    """
)


@FUZZ
@given(st.integers(0, len(VALID)), st.integers(0, 4), st.text(max_size=4))
def test_a_valid_file_damaged_anywhere_loads_or_is_refused_cleanly(at, cut, insert):
    damaged = VALID[:at] + insert + VALID[at + cut :]
    check_loads_or_refuses(damaged.encode("utf-8", "surrogatepass"))


def _valid(spec: FieldSpec) -> st.SearchStrategy:
    single_line = st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
        min_size=1,
        max_size=30,
    )
    if spec.type == "int":
        base: st.SearchStrategy = st.integers(int(spec.minimum or 0), int(spec.maximum or 10**9))
    elif spec.type == "float":
        base = st.floats(spec.minimum, spec.maximum, allow_nan=False)
    elif spec.type == "choice":
        base = st.sampled_from(spec.choices)
    elif spec.type == "url":
        base = st.sampled_from(["http://127.0.0.1:11434", "https://gpu-box.lan:8443/v1"])
    elif spec.type == "text":
        base = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)
    elif spec.type == "secret":
        base = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1)
    elif spec.type == "mcp":
        base = st.just(())
    elif spec.name == "api_key_env":
        base = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
    else:
        base = single_line.filter(lambda s: s.strip()) if spec.required else single_line
    return st.one_of(st.none(), base) if spec.nullable else base


valid_agents = st.fixed_dictionaries({spec.name: _valid(spec) for spec in AGENT_FIELDS}).filter(
    lambda v: (
        (v["api_key"] is None or v["api_key_env"] is None)  # one source of the key
        and (v["kv_cache_type"] == "f16" or v["flash_attn"] != "off")  # a quantized V needs FA
    )
)

ORIGINAL = textwrap.dedent(
    """\
    # The coding agent
    name = "coder"          # shown in the sidebar
    provider = "ollama"
    model = "qwen2.5-coder:7b"

    # keep runs short
    max_iterations = 40

    [budget]
    # per run
    max_tokens = 100000
    """
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_agents)
def test_any_valid_agent_saved_over_a_commented_file_loads_back_equal(values):
    config = AgentConfig.from_values(values)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "coder.toml"
        path.write_text(ORIGINAL)
        saved = save_agent(path, config, force=True)
        assert saved == config
        assert load_agent(path) == config
        text = path.read_text()
        for comment in ("# The coding agent", "# keep runs short", "# per run"):
            assert comment in text

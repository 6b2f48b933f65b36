"""The agent schema is the single description of every setting."""

import dataclasses

import pytest

from engine.config import AGENT_FIELDS, FIELDS_BY_NAME, AgentConfig, AgentConfigError, FieldProblem
from engine.config.schema import DEFAULT_SYSTEM_PROMPT
from engine.providers.base import PROVIDER_KINDS

FILE_STATE = {"source_path", "loaded_mtime_ns", "loaded_digest"}


def test_agent_config_holds_exactly_the_schema_fields():
    names = [f.name for f in dataclasses.fields(AgentConfig) if f.name not in FILE_STATE]
    assert names == [spec.name for spec in AGENT_FIELDS]


def test_agent_config_defaults_are_the_schema_defaults():
    config = AgentConfig(name="x")
    for spec in AGENT_FIELDS:
        if spec.name != "name":
            assert getattr(config, spec.name) == spec.default, spec.name


def test_every_field_is_documented_for_the_template_and_the_editor():
    for spec in AGENT_FIELDS:
        assert spec.label and spec.description.endswith("."), spec.name
        if spec.nullable:
            assert spec.default is None and spec.unset, spec.name


def test_the_default_agent_prompt_is_short_and_present():
    assert 50 < len(DEFAULT_SYSTEM_PROMPT) < 600
    assert AgentConfig(name="x").system_prompt == DEFAULT_SYSTEM_PROMPT


def test_the_provider_choices_are_the_five_engines():
    assert FIELDS_BY_NAME["provider"].choices == PROVIDER_KINDS


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("num_ctx", "big", "must be an integer ≥ 256, got 'big'"),
        ("num_ctx", 100, "must be an integer ≥ 256, got 100"),
        ("num_ctx", True, "must be an integer ≥ 256, got true"),
        ("num_ctx", 8192.0, "must be an integer ≥ 256, got 8192.0"),
        ("compaction_ratio", 1.5, "must be a number from 0.1 to 0.99, got 1.5"),
        ("compaction_ratio", float("nan"), "must be a number from 0.1 to 0.99, got nan"),
        ("provider", "olama", "(did you mean 'ollama'?)"),
        ("base_url", "localhost:11434", "must be an http:// or https:// URL"),
        ("base_url", "http://", "must be an http:// or https:// URL"),
        ("model", "a\nb", "must be a single line"),
        ("model", "a\u2028b", "must be a single line"),
        ("name", "  ", "must not be empty"),
        ("budget_max_tokens", -1, "must be an integer from 0 to 1000000000, got -1"),
        ("temperature", {"a": 1}, "got a table"),
        ("max_iterations", [1], "got an array"),
    ],
)
def test_a_bad_value_is_refused_with_the_reason(field, value, expected):
    with pytest.raises(FieldProblem) as caught:
        FIELDS_BY_NAME[field].validate(value)
    assert expected in str(caught.value)


def test_an_integer_is_accepted_where_a_number_is_expected():
    assert FIELDS_BY_NAME["temperature"].validate(1) == 1.0
    assert isinstance(FIELDS_BY_NAME["temperature"].validate(1), float)


def test_an_empty_string_unsets_a_nullable_field():
    assert FIELDS_BY_NAME["base_url"].validate("") is None
    assert FIELDS_BY_NAME["summarizer_model"].validate("") is None


def test_the_editor_parses_typed_text_with_the_same_rules():
    num_ctx = FIELDS_BY_NAME["num_ctx"]
    assert num_ctx.parse_text(" 16,384 ") == 16384
    assert num_ctx.parse_text("") is None  # blank removes the pin
    with pytest.raises(FieldProblem, match="must be an integer ≥ 256, got 'lots'"):
        num_ctx.parse_text("lots")
    ratio = FIELDS_BY_NAME["compaction_ratio"]
    assert ratio.parse_text("") == 0.8  # not nullable: blank means the default
    assert ratio.parse_text(ratio.format_text(0.75)) == 0.75
    with pytest.raises(FieldProblem, match="must not be empty"):
        FIELDS_BY_NAME["name"].parse_text(" ")


def test_building_an_agent_with_a_bad_value_names_the_agent_and_the_field():
    with pytest.raises(AgentConfigError) as caught:
        AgentConfig(name="coder", num_ctx=12)
    assert str(caught.value) == "agent 'coder': num_ctx: must be an integer ≥ 256, got 12"
    assert caught.value.field == "num_ctx"


def test_with_changes_validates_like_the_loader():
    config = AgentConfig(name="c", provider="ollama", model="qwen")
    assert config.with_changes(num_ctx=4096).num_ctx == 4096
    with pytest.raises(AgentConfigError, match="compaction_ratio"):
        config.with_changes(compaction_ratio=0.0)
    with pytest.raises(AgentConfigError, match="num_cxt: unknown setting"):
        config.with_changes(num_cxt=4096)


def test_the_base_url_defaults_per_engine():
    assert AgentConfig(name="o", provider="ollama").effective_base_url == "http://127.0.0.1:11434"
    assert AgentConfig(name="v", provider="vllm").effective_base_url == "http://127.0.0.1:8000"
    custom = AgentConfig(name="s", provider="sglang", base_url="http://gpu-box:30000/")
    assert custom.effective_base_url == "http://gpu-box:30000"
    assert AgentConfig(name="e").effective_base_url is None


def test_settings_that_do_nothing_for_the_engine_are_warned_about():
    config = AgentConfig(name="o", provider="ollama", n_threads=8, num_ctx=8192)
    assert config.warnings() == ["n_threads applies only to embedded; ignored for ollama"]
    tight = AgentConfig(name="t", num_ctx=4096, compaction_reserve_tokens=4096)
    assert any("every request would compact" in w for w in tight.warnings())
    assert AgentConfig(name="fine").warnings() == []


def test_model_copy_is_with_changes_under_pydantics_name():
    config = AgentConfig(name="c").model_copy(update={"provider": "vllm", "num_ctx": 4096})
    assert (config.provider, config.num_ctx) == ("vllm", 4096)
    with pytest.raises(AgentConfigError):
        config.model_copy(update={"num_ctx": 1})

"""The sampler settings in an agent file: read with the rest, refused with the field and the
range a person can act on, and never lost by a refusal or a save."""

import textwrap

import pytest

from engine.config import AgentConfigError, default_agent, load_agent, load_agents, save_agent
from engine.providers.sampling import Sampling


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_bad_sampling_values_each_name_their_field_and_range_and_the_file_is_kept(tmp_path):
    text = textwrap.dedent(
        """
        name = "hot"
        # my own notes on sampling
        temperature = "hot"
        top_p = 3
        top_k = -1
        min_p = 1.5
        repeat_penalty = 0
        seed = -2
        """
    ).lstrip("\n")
    path = write(tmp_path / "agents" / "hot.toml", text)
    good = write(tmp_path / "agents" / "good.toml", 'name = "good"\ntop_k = 0\n')
    with pytest.raises(AgentConfigError) as caught:
        load_agent(path)
    assert [(p.field, p.message) for p in caught.value.problems] == [
        ("temperature", "must be a number from 0 to 5, got 'hot'"),
        ("top_p", "must be a number from 0.01 to 1, got 3"),
        ("top_k", "must be an integer from 0 to 100000, got -1"),
        ("min_p", "must be a number from 0 to 1, got 1.5"),
        ("repeat_penalty", "must be a number from 0.1 to 2, got 0"),
        ("seed", "must be an integer from 0 to 2147483647, got -2"),
    ]
    # Nothing is lost: the file is as written, and the other agents load beside it.
    assert path.read_text(encoding="utf-8") == text
    agents, errors = load_agents(tmp_path / "agents")
    assert [a.name for a in agents] == ["good"] and agents[0].sampling.top_k == 0
    assert [e.path for e in errors] == [path]
    assert good.exists()


def test_an_agent_file_without_sampling_takes_brims_measured_defaults(tmp_path):
    path = write(tmp_path / "plain.toml", 'name = "plain"\nprovider = "vllm"\n')
    assert load_agent(path).sampling == Sampling()
    assert Sampling().temperature is not None  # sent, so vLLM's 1.0 never applies


def test_the_default_agent_file_carries_its_sampling_written_out(tmp_path):
    from engine.resources import default_agent_file

    text = default_agent_file()
    default = Sampling()
    for line in (
        f"temperature = {default.temperature}",
        f"top_p = {default.top_p}",
        f"top_k = {default.top_k}",
        f"min_p = {default.min_p}",
        f"repeat_penalty = {default.repeat_penalty}",
        "# seed = 42",
    ):
        assert f"\n{line}\n" in text


def test_a_saved_sampling_change_rewrites_only_that_key(tmp_path):
    path = write(tmp_path / "a.toml", 'name = "a"\ntop_k = 20  # narrow\nseed = 5\n')
    saved = save_agent(path, load_agent(path).with_changes(top_p=0.5, seed=None))
    assert path.read_text(encoding="utf-8") == 'name = "a"\ntop_k = 20  # narrow\ntop_p = 0.5\n'
    assert (saved.top_p, saved.top_k, saved.seed) == (0.5, 20, None)
    assert default_agent().seed is None

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


def test_an_agent_file_without_sampling_leaves_every_setting_to_the_model(tmp_path):
    path = write(tmp_path / "plain.toml", 'name = "plain"\nprovider = "vllm"\n')
    assert load_agent(path).sampling == Sampling()
    assert Sampling().unset() == (
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "repeat_penalty",
        "seed",
    )


def test_the_default_agent_file_writes_no_sampling_value_out(tmp_path):
    from engine.resources import default_agent_file

    text = default_agent_file()
    for name in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty"):
        assert f"\n# {name} = ...\n" in text
    assert "# seed = 42" in text
    assert load_agent(write(tmp_path / "d.toml", text)).sampling == Sampling()


OLD_BLOCK = "temperature = 0.0\ntop_p = 0.9\ntop_k = 40\nmin_p = 0.05\nrepeat_penalty = 1.05\n"


def test_the_block_brim_wrote_into_older_files_is_read_as_unset(tmp_path):
    """Every file Brim wrote before carried its five defaults: that untouched block is
    Brim's writing, not a choice, and leaves the settings to the model."""
    path = write(tmp_path / "old.toml", 'name = "old"\nprovider = "ollama"\n' + OLD_BLOCK)
    assert load_agent(path).sampling == Sampling()
    seeded = write(tmp_path / "s.toml", 'name = "s"\n' + OLD_BLOCK + "seed = 3\n")
    assert load_agent(seeded).sampling == Sampling(seed=3)


def test_an_edited_block_in_an_older_file_is_kept_whole_as_the_agents(tmp_path):
    edited = OLD_BLOCK.replace("temperature = 0.0", "temperature = 0.7")
    path = write(tmp_path / "old.toml", 'name = "old"\n' + edited)
    assert load_agent(path).sampling == Sampling(
        temperature=0.7, top_p=0.9, top_k=40, min_p=0.05, repeat_penalty=1.05
    )
    partial = write(tmp_path / "p.toml", 'name = "p"\ntemperature = 0.0\n')
    assert load_agent(partial).sampling == Sampling(temperature=0.0)  # one line is a choice


def test_a_saved_sampling_change_rewrites_only_that_key(tmp_path):
    path = write(tmp_path / "a.toml", 'name = "a"\ntop_k = 20  # narrow\nseed = 5\n')
    saved = save_agent(path, load_agent(path).with_changes(top_p=0.5, seed=None))
    assert path.read_text(encoding="utf-8") == 'name = "a"\ntop_k = 20  # narrow\ntop_p = 0.5\n'
    assert (saved.top_p, saved.top_k, saved.seed) == (0.5, 20, None)
    assert default_agent().seed is None

"""The [[mcp]] tables of an agent file: read, refused with a reason, written back."""

import pytest

from engine.config import AgentConfigError
from engine.config.agent_files import parse_agent_text, render_agent

GOOD = """
name = "x"

[[mcp]]
name = "git"
command = ["mcp-server-git", "--repository", "~/src/brim"]
env = { GIT_PAGER = "cat" }

[[mcp]]
name = "web"
url = "http://127.0.0.1:8765/mcp"
approve = "auto"
tier = "always"
"""


def test_mcp_tables_load_as_servers_and_survive_a_rewrite():
    agent = parse_agent_text(GOOD)
    git, web = agent.mcp
    assert git.command == ("mcp-server-git", "--repository", "~/src/brim")
    assert git.env == (("GIT_PAGER", "cat"),) and git.approve == "ask" and git.tier == "deferred"
    assert web.url == "http://127.0.0.1:8765/mcp" and web.approve == "auto"
    assert parse_agent_text(render_agent(agent)).mcp == agent.mcp


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('name = "g"', "mcp[1] (g): needs a command (a stdio server) or a url"),
        (
            'name = "g"\ncommand = ["a"]\nurl = "http://x"',
            "mcp[1] (g): set command or url, not both",
        ),
        (
            'name = "g"\ncommand = ["a"]\napprove = "yes"',
            "approve must be one of ask, auto, got 'yes'",
        ),
        ('name = "g"\ncommand = ["a"]\ntier = "eager"', "tier must be one of deferred, always"),
        ('name = "a__b"\ncommand = ["a"]', "no '__'"),
        ('name = "g"\ncommand = []', "command must be an array of strings"),
        ('name = "g"\nurl = "ftp://x"', "url must be an http:// or https:// URL"),
    ],
)
def test_a_bad_mcp_entry_is_refused_naming_the_entry_and_the_reason(entry, says):
    with pytest.raises(AgentConfigError) as caught:
        parse_agent_text(f'name = "x"\n[[mcp]]\n{entry}\n')
    assert caught.value.field == "mcp"
    assert says in caught.value.problem


def test_two_servers_of_one_name_are_refused():
    text = (
        'name = "x"\n[[mcp]]\nname = "g"\ncommand = ["a"]\n[[mcp]]\nname = "g"\nurl = "http://h"\n'
    )
    with pytest.raises(AgentConfigError, match="mcp\\[2\\] \\(g\\): a second server"):
        parse_agent_text(text)

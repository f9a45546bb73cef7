"""Subagent definitions from code, a config object and Markdown files with front matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent import AgentDefinition
from desktop_agent.core.tooling.agent_definitions import (
    AgentDefinitionError,
    definition_from_markdown,
    definitions_from_config,
    definitions_from_folder,
)

CLAUDE_STYLE = """---
name: reviewer
description: Reviews a diff for bugs; use after changing code.
tools: read_file, grep, glob
model: qwen2.5-coder-1.5b
---
You review code. Report real bugs only, with file and line.
"""


def test_claude_code_markdown_reads_as_a_definition() -> None:
    found = definition_from_markdown(CLAUDE_STYLE, "reviewer.md")
    assert found == AgentDefinition(
        "Reviews a diff for bugs; use after changing code.",
        "You review code. Report real bugs only, with file and line.",
        ("read_file", "grep", "glob"), "qwen2.5-coder-1.5b", None, None, "reviewer",
        "reviewer.md")


def test_lists_quotes_and_inherit() -> None:
    found = definition_from_markdown(
        "---\ndescription: \"Tests: runs them\"\ntools:\n  - bash\n  - read_file\n"
        "model: inherit\nmax_turns: 4\n---\nRun the tests.", "/p/.agents/agents/tester.md")
    assert (found.name, found.description, found.tools, found.model, found.max_turns) == (
        "tester", "Tests: runs them", ("bash", "read_file"), None, 4)
    assert definition_from_markdown("---\ndescription: d\ntools: [a, 'b']\n---\np",
                                    "x.md").tools == ("a", "b")


@pytest.mark.parametrize("text, words", [
    ("no front matter", "starts with no front matter"),
    ("---\ndescription: d\n", "no closing '---'"),
    ("---\nprompt: p\n---\n", "needs a description"),
    ("---\ndescription: d\nmax_turns: 0\n---\np", "max_turns must be a positive"),
    ("---\ndescription: d\ncolour: red\n---\np", "unknown field(s) colour"),
    ("---\njust words\n---\np", "is not 'key: value'"),
])
def test_bad_markdown_is_named(text: str, words: str) -> None:
    with pytest.raises(AgentDefinitionError, match=r"bad\.md") as caught:
        definition_from_markdown(text, "bad.md")
    assert words in str(caught.value)


def test_a_config_object_and_its_mistakes() -> None:
    found = definitions_from_config({"tester": {
        "description": "Runs tests.", "prompt": "Run them.", "tools": ["bash"],
        "base_url": "http://127.0.0.1:8081/v1", "max_turns": 3}}, "config.json")
    assert found["tester"].base_url == "http://127.0.0.1:8081/v1"
    assert found["tester"].source == "config.json"
    with pytest.raises(AgentDefinitionError, match=r"config\.json: agents\.x: base_url must"):
        definitions_from_config({"x": {"description": "d", "prompt": "p",
                                       "base_url": "ftp://x"}}, "config.json")
    with pytest.raises(AgentDefinitionError, match="agents must be an object"):
        definitions_from_config([], "config.json")


def test_a_project_folder_gives_ours_then_claude_codes(tmp_path: Path) -> None:
    ours, claude = tmp_path / ".agents" / "agents", tmp_path / ".claude" / "agents"
    ours.mkdir(parents=True)
    claude.mkdir(parents=True)
    (ours / "reviewer.md").write_text(CLAUDE_STYLE)
    (claude / "tester.md").write_text("---\ndescription: Runs tests.\n---\nRun them.")
    (claude / "broken.md").write_text("no front matter here")
    found, problems = definitions_from_folder(tmp_path)
    assert sorted(found) == ["reviewer", "tester"]
    assert len(problems) == 1 and "broken.md" in problems[0]

"""A script's own skills and commands: ``AgentOptions(skills_dirs=..., commands_dirs=...)``.

Against the scripted model server: what the model is sent (the skills' names in the
system prompt, the command's text as the prompt) and what loading a skill gives it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent import Client, query
from desktop_agent.core import errors
from desktop_agent.testing import ScriptedServer, script


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def test_skills_from_a_folder_are_offered_and_loaded_without_asking(
        server: ScriptedServer, make_options, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write(skills / "haiku/SKILL.md", "---\nname: haiku\ndescription: Write a haiku when "
          "asked for a poem.\n---\nThree lines: 5, 7 and 5 syllables.\n")
    write(skills / "broken/SKILL.md", "No front matter here.\n")
    server.enqueue(script.tool_calls([("load_skill", {"name": "haiku"})], ids=["c1"]),
                   script.text("Autumn moonlight..."), script.text("Again."))
    options = make_options(system_prompt="You are terse.", skills_dirs=[skills],
                           auto_execute_tools=True)
    async with Client(options) as client:
        await client.query("A poem, please")
        [_ async for _ in client.receive_messages()]
        await client.query("Another")
        [_ async for _ in client.receive_messages()]
    system = server.requests[0]["messages"][0]["content"]
    assert system.startswith("You are terse.\n\n# Skills")
    assert "- haiku: Write a haiku when asked for a poem." in system
    assert "Three lines" not in system and "broken" not in system
    result = next(m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "Three lines: 5, 7 and 5 syllables." in result
    # a second query reads the folder again: the same prompt, not the section twice
    assert server.requests[2]["messages"][0]["content"] == system
    assert [t["function"]["name"] for t in server.requests[2]["tools"]] == ["load_skill"]


async def test_a_command_from_a_folder_becomes_the_prompt(
        server: ScriptedServer, make_options, tmp_path: Path) -> None:
    commands = tmp_path / "commands"
    write(commands / "review.md", "---\ndescription: Review a file\n---\n"
          "Review $ARGUMENTS for bugs.\n")
    server.enqueue(script.text("Looks fine."), script.text("Ok."))
    options = make_options(commands_dirs=[str(commands)])
    [_ async for _ in query("/review app.py", options)]
    assert server.requests[0]["messages"][-1]["content"] == "Review app.py for bugs."
    [_ async for _ in query("/etc/hosts is odd", options)]  # no such command: as typed
    assert server.requests[1]["messages"][-1]["content"] == "/etc/hosts is odd"


def test_folders_are_checked(make_options, tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigurationError, match="lists of folders"):
        make_options(skills_dirs=str(tmp_path))


async def test_a_missing_skills_folder_is_named(make_options, tmp_path: Path) -> None:
    options = make_options(skills_dirs=[tmp_path / "nowhere"])
    with pytest.raises(errors.ConfigurationError, match="nowhere is not a folder"):
        async with Client(options) as client:
            await client.query("Hi")


def test_the_example_script_loads_the_skill_and_sends_the_command(
        server: ScriptedServer) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    server.enqueue(script.tool_calls([("load_skill", {"name": "haiku"})], ids=["c1"]),
                   script.text("Grey winter waves fold"))
    env = {**os.environ, "PYTHONPATH": str(root), "DESKTOP_AGENT_BASE_URL": server.base_url,
           "DESKTOP_AGENT_MODEL": "test-model"}
    done = subprocess.run([sys.executable, str(root / "examples/skills_and_commands.py")],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "[load_skill] {'name': 'haiku'}" in done.stdout
    assert "Grey winter waves fold" in done.stdout
    first = server.requests[0]["messages"]
    assert first[-1]["content"] == "Write a short poem about the sea."
    assert "- haiku: Write a haiku." in first[0]["content"]
    tool = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "5, 7 and 5 syllables" in tool["content"]

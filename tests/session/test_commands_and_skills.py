"""Slash commands and skills of a conversation, from real folders, through a real turn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.tooling.skills.markdown_file import FILE_LIMIT
from desktop_agent.session.commands.conversation_commands import UnknownCommand
from desktop_agent.testing import ScriptedServer, script


async def finished(session: Any) -> None:
    while session.busy:
        await asyncio.sleep(0.02)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


async def test_command_files_expand_into_the_message(
        make_session: Any, project: Path, data_dir: Path) -> None:
    write(project / ".agents/commands/review.md",
          "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $ARGUMENTS "
          "for bugs.\n")
    write(project / ".claude/commands/fix.md", "Fix issue $1 in $2, please.\n")
    write(project / ".claude/commands/review.md", "the .agents one wins\n")
    write(project / ".agents/commands/frontend/lint.md", "# Lint the front end\nRun lint.\n")
    write(project / ".agents/commands/loop.md", "Do it again: /loop\n")
    write(project / ".agents/commands/broken.md", b"\xff\xfe not text")
    write(data_dir / "commands/hello.md", "Say hello.")
    session = make_session(workdir=str(project))
    listed = {c.name: c for c in await session.slash_commands()}
    assert (listed["review"].description, listed["review"].argument_hint) == \
        ("Review a file", "<file>")
    assert listed["frontend:lint"].description == "Lint the front end"
    assert listed["hello"].kind == "command"
    assert "broken" not in listed
    review = await session.expand_slash("/review src/app.py")
    assert (review.kind, review.message) == ("command", "Review src/app.py for bugs.")
    fix = await session.expand_slash('/fix 42 "the parser"')
    assert fix.message == "Fix issue 42 in the parser, please."
    hello = await session.expand_slash("/hello and be brief")
    assert hello.message == "Say hello.\n\nand be brief"
    loop = await session.expand_slash("/loop")  # expanded once: it never recurses
    assert loop.message == "Do it again: /loop"
    with pytest.raises(UnknownCommand, match="no command /nope"):
        await session.expand_slash("/nope")
    _commands, skipped = await asyncio.to_thread(session._commands.custom_commands)
    assert any("broken.md" in p and "UTF-8" in p for p in skipped)


async def test_a_huge_command_file_is_cut_and_said(make_session: Any, project: Path) -> None:
    write(project / ".agents/commands/big.md", "word " * (FILE_LIMIT // 2))
    session = make_session(workdir=str(project))
    big = await session.expand_slash("/big")
    assert len(big.message) <= FILE_LIMIT and "cut" in big.notes[0]


def skill(folder: Path, name: str, description: str, body: str) -> Path:
    return write(folder / name / "SKILL.md",
                 f"---\nname: {name}\ndescription: {description}\n---\n{body}")


async def test_skills_are_named_in_the_prompt_and_loaded_on_use(
        make_session: Any, project: Path, data_dir: Path, model_server: ScriptedServer,
        asker: Any) -> None:
    skills = project / ".agents/skills"
    skill(skills, "pdf-forms", "Fill PDF forms. Use when a PDF form is mentioned.",
          "SECRET-BODY: run scripts/fill.py\n")
    write(skills / "pdf-forms/scripts/fill.py", "print('filling')\n")
    skill(data_dir / "skills", "release-notes", "Write release notes from git history.",
          "Read git log.\n")
    write(skills / "no-front/SKILL.md", "Just a body.\n")
    skill(skills, "huge", "A skill with a huge body.", "x" * (FILE_LIMIT * 2))
    model_server.enqueue(
        script.tool_calls([("load_skill", {"name": "pdf-forms"})], ids=["c1"]),
        script.tool_calls([("load_skill", {"name": "pdf-forms", "file": "scripts/fill.py"}),
                           ("load_skill", {"name": "pdf-forms", "file": "../../secret"}),
                           ("load_skill", {"name": "huge"})], ids=["c2", "c3", "c4"]),
        script.text("Done."))
    session = make_session(workdir=str(project), skills_off=["release-notes"])
    found, problems = await asyncio.to_thread(session.skills)
    assert {s.name for s in found} == {"pdf-forms", "release-notes", "huge"}
    assert any("no-front" in p and "no front matter" in p for p in problems)
    listing = await asyncio.to_thread(session.skill_listing)
    assert listing.off == {"release-notes"} and len(listing.skipped) == len(problems)
    from desktop_agent.core.context.tokens import count_text_tokens

    assert listing.tokens["pdf-forms"] == count_text_tokens(
        "- pdf-forms: Fill PDF forms. Use when a PDF form is mentioned.")
    all_on = listing.prompt_tokens(frozenset())
    assert all_on - listing.prompt_tokens() == listing.tokens["release-notes"]
    session.send("Fill the form in a.pdf")
    await finished(session)
    system = model_server.requests[0]["messages"][0]
    assert system["role"] == "system" and "pdf-forms: Fill PDF forms" in system["content"]
    assert "SECRET-BODY" not in system["content"]  # only names and descriptions
    assert "release-notes" not in system["content"]  # turned off for this conversation
    results = {m["tool_call_id"]: m["content"] for m in model_server.requests[2]["messages"]
               if m["role"] == "tool"}
    assert "SECRET-BODY" in results["c1"] and "scripts/fill.py" in results["c1"]
    assert "print('filling')" in results["c2"]
    assert "not a file of the skill" in results["c3"]
    assert "the rest was cut" in results["c4"]
    assert asker.questions == []  # loading a skill is never asked about
    calls = [json.loads(c["function"]["arguments"])
             for m in model_server.requests[1]["messages"] if m.get("tool_calls")
             for c in m["tool_calls"]]
    assert calls == [{"name": "pdf-forms"}]  # the card shows the skill's name


async def test_no_skills_no_tool_and_no_section(make_session: Any, project: Path,
                                                model_server: ScriptedServer) -> None:
    model_server.enqueue(script.text("Hi."))
    session = make_session(workdir=str(project))
    session.send("Hello")
    await finished(session)
    sent = model_server.requests[0]
    assert "load_skill" not in json.dumps(sent.get("tools", []))
    assert "# Skills" not in json.dumps(sent["messages"])


async def test_builtins_come_first_help_lists_everything_and_values_fill_arguments(
        make_session: Any, project: Path) -> None:
    write(project / ".agents/commands/compare.md",
          "---\nargument-hint: old new\n---\nCompare $1 with $2.")
    write(project / ".agents/commands/undo.md", "A file cannot replace a built-in.")
    write(project / ".agents/skills/tidy/SKILL.md",
          "---\nname: tidy\ndescription: Tidy a module.\n---\nDo it.")
    write(project / ".agents/skills/old/SKILL.md",
          "---\nname: old\ndescription: Turned off.\n---\nNo.")
    session = make_session(workdir=str(project), skills_off=["old"])
    listed = await session.slash_commands()
    assert [c.name for c in listed if c.kind == "builtin"] == [
        "undo", "compact", "plan", "model", "clear", "help"]
    assert [c.name for c in listed].count("undo") == 1
    compare = next(c for c in listed if c.name == "compare")
    assert [(a.name, a.required) for a in compare.arguments] == [("old", False),
                                                                 ("new", False)]
    rest = await session.slash_commands(front="rest")
    assert [c.name for c in rest if c.kind == "builtin"] == ["compact", "help"]
    helped = await session.slash_help()
    assert "`/compact`" in helped and "`/compare`" in helped and "tidy" in helped
    assert "Turned off" not in helped
    got = await session.expand_slash("/compare", {"old": "a b.txt", "new": "c.txt"})
    assert got.message == "Compare a b.txt with c.txt."
    with pytest.raises(ValueError, match="built-in command"):
        await session.expand_slash("/undo")
    await session.close()

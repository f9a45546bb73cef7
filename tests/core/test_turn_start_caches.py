"""What a turn's start builds once per process: the built-in tools' declarations and tool sizes.

Every turn of every conversation makes its built-in tools anew (closures over
its own folder) and counts their schemas before sending; these check that the
schema work is done once while each conversation's tools still act on its own
folder and still refuse bad arguments.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent.core.context import prompt_size
from desktop_agent.core.errors import ToolInputError
from desktop_agent.core.tooling.builtin import builtin_tools, declare
from desktop_agent.core.tooling.tools import Tool


def _folder(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "notes.txt").write_text(text)
    return folder


async def test_two_conversations_tools_are_declared_once_and_act_on_their_own_folders(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = {t.name: t for t in builtin_tools(_folder(tmp_path, "a", "alpha\n"))}
    declared: list[str] = []
    real_tool = declare.tool

    def counting_tool(*args: object, **kwargs: object) -> object:
        declared.append(str(args[0]) if args else "?")
        return real_tool(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(declare, "tool", counting_tool)
    second = {t.name: t for t in builtin_tools(_folder(tmp_path, "b", "beta\n"))}

    assert declared == []  # the second set reused the first one's declarations
    assert second["read_file"].input_schema is first["read_file"].input_schema
    assert "alpha" in await first["read_file"].execute({"path": "notes.txt"})
    assert "beta" in await second["read_file"].execute({"path": "notes.txt"})
    with pytest.raises(ToolInputError, match="path"):
        second["read_file"].validate({"offset": 2})
    assert second["bash"].description == first["bash"].description


def test_a_declaration_with_other_arguments_is_not_taken_for_another(
        tmp_path: Path) -> None:
    def make(brief: str) -> Tool:
        @declare.builtin_tool(brief=brief)
        def probe(path: str) -> str:
            """Look at a path.

            Args:
                path: Where.
            """
            return path

        return probe

    assert make("One.").description == "One."
    assert make("Two.").description == "Two."


def test_tool_schemas_are_serialized_once_for_two_turns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    turn_one = builtin_tools(_folder(tmp_path, "a", ""))
    counted = prompt_size.tools_tokens(turn_one)
    as_dicts = [t.to_openai_format() for t in turn_one]
    serialized: list[object] = []
    real_json = prompt_size.schema_json

    def counting_json(schema: object) -> str:
        serialized.append(schema)
        return real_json(schema)

    monkeypatch.setattr(prompt_size, "schema_json", counting_json)
    turn_two = builtin_tools(_folder(tmp_path, "b", ""))

    assert prompt_size.tools_tokens(turn_two) == counted
    assert prompt_size.tools_tokens(as_dicts) == counted  # compaction counts the request's
    assert serialized == []
    turn_two[0].description = "A longer description than before, so more tokens to send."
    assert prompt_size.tools_tokens(turn_two) > counted
    assert len(serialized) == 1

"""The loops small models make are caught: told once, then stopped with the rule named.

Over real HTTP (ScriptedServer): the model's repeated calls come back as a
corrective tool result the model reads, and a second offence ends the turn with
a stop that says which rule matched.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_agent import Client, tool
from desktop_agent.core.tooling.loop_guard import LoopGuard, normalized
from desktop_agent.core.types import ToolResultBlock, ToolUseBlock, ToolUseError
from desktop_agent.testing import script

RAN: list[dict[str, Any]] = []


@tool("read_file", "Reads a file", {"path": str, "offset": int})
async def read_file(args: dict[str, Any]) -> str:
    RAN.append({"read_file": args})
    return f"contents of {args['path']}"


@tool("list_dir", "Lists a folder", {"path": str})
async def list_dir(args: dict[str, Any]) -> str:
    RAN.append({"list_dir": args})
    return "a.txt b.txt"


async def _turn(server, make_options, replies: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    RAN.clear()
    server.enqueue(*replies)
    options = make_options(tools=[read_file, list_dir], auto_execute_tools=True,
                           max_tool_iterations=20)
    async with Client(options) as client:
        await client.query("look around")
        items = [item async for item in client.receive_messages()]
        return items, dict(client.turn_metadata)


def _calls(*pairs: tuple[str, dict[str, Any]]) -> Any:
    return [script.tool_calls([pair]) for pair in pairs]


async def test_near_identical_arguments_are_corrected_then_stopped(server, make_options) -> None:
    variants = [{"path": "notes/a.txt", "offset": 2}, {"path": " notes/a.txt ", "offset": 2},
                {"path": "notes/a.txt\n", "offset": 2.0}, {"path": "notes/a.txt", "offset": 2}]
    items, metadata = await _turn(server, make_options,
                                  _calls(*[("read_file", v) for v in variants]))
    assert len(RAN) == 2  # the third was answered, the fourth stopped
    corrections = [i for i in items if isinstance(i, ToolResultBlock) and i.is_error]
    assert len(corrections) == 1
    assert "differ only in spacing, number format or empty values" in corrections[0].content
    stop = items[-2]
    assert isinstance(stop, ToolUseError)
    assert stop.error.startswith("Stopped by the loop guard: read_file was called 3 times")
    assert "(near-identical calls)" in stop.error
    assert metadata["loop_rule"] == "near-identical"
    assert metadata["stopped"] == stop.error


async def test_alternating_calls_are_corrected_then_stopped(server, make_options) -> None:
    a = ("read_file", {"path": "a.txt", "offset": 0})
    b = ("list_dir", {"path": "."})
    items, metadata = await _turn(server, make_options, _calls(a, b, a, b, a, b))
    assert len(RAN) == 3  # A B A ran; the fourth (B) completed the pattern and was answered
    corrections = [i for i in items if isinstance(i, ToolResultBlock) and i.is_error]
    assert [c.name for c in corrections] == ["list_dir"]
    assert "alternating between the same calls (read_file and list_dir)" in \
        corrections[0].content
    assert "(alternating calls)" in items[-2].error
    assert metadata["loop_rule"] == "alternating"
    assert len(server.requests) == 5


async def test_a_model_that_changes_course_after_the_correction_goes_on(server,
                                                                        make_options) -> None:
    same = ("list_dir", {"path": "."})
    replies = [*_calls(same, same, same, ("read_file", {"path": "a.txt", "offset": 0})),
               script.text("a.txt holds its contents.")]
    items, metadata = await _turn(server, make_options, replies)
    assert [next(iter(r)) for r in RAN] == ["list_dir", "list_dir", "read_file"]
    assert not any(isinstance(i, ToolUseError) for i in items)
    assert metadata.get("loop_corrected") == "identical" and "loop_rule" not in metadata
    assert "stopped" not in metadata


async def test_paging_through_a_file_is_not_a_loop(server, make_options) -> None:
    pages = [("read_file", {"path": "a.txt", "offset": n}) for n in (0, 100, 200, 300, 400)]
    items, metadata = await _turn(server, make_options, [*_calls(*pages), script.text("done")])
    assert len(RAN) == 5 and "stopped" not in metadata
    assert not any(isinstance(i, ToolResultBlock) and i.is_error for i in items)


@pytest.mark.parametrize(("a", "b", "same"), [
    ({"q": "Hello  World"}, {"q": " Hello World "}, True),
    ({"genotype": "AA"}, {"genotype": "Aa"}, False),
    ({"n": 2}, {"n": "2.0"}, True),
    ({"n": 2, "limit": None}, {"n": 2}, True),
    ({"n": 2}, {"n": 3}, False),
    ({"path": "a.txt"}, {"path": "b.txt"}, False),
    ({"flag": True}, {"flag": "true"}, False),
])
def test_normalized_sets_aside_only_trivial_differences(a, b, same) -> None:
    assert (normalized(a) == normalized(b)) is same


def test_a_threshold_of_zero_turns_the_guard_off() -> None:
    guard = LoopGuard(0)
    call = ToolUseBlock("c1", "list_dir", {"path": "."})
    assert all(guard.observe([call]) is None for _ in range(10))

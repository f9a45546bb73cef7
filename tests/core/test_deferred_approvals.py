"""Approvals that wait: stop at a pending call, save it, resume later with the answer."""

import json

import pytest

from desktop_agent import (
    ApprovalsPendingError,
    Client,
    PendingApproval,
    PermissionResultAllow,
    PermissionResultDefer,
    PermissionRule,
    TextBlock,
    ToolResultBlock,
    defer_approval,
    tool,
)
from desktop_agent.core.context.history_stores import MemoryHistory
from desktop_agent.testing import script

pytestmark = pytest.mark.timeout(60)

DELETED: list[str] = []


@tool("delete_file", "Delete a file", {"path": str})
async def delete_file(args):
    DELETED.append(args["path"])
    return f"deleted {args['path']}"


@tool("read_file", "Read a file", {"path": str}, read_only=True)
async def read_file(args):
    return f"contents of {args['path']}"


@pytest.fixture(autouse=True)
def _clean():
    DELETED.clear()


def agent(make_options, **extra):
    return make_options(tools=[delete_file, read_file], auto_execute_tools=True,
                        can_use_tool=defer_approval, **extra)


async def drain(client):
    return [item async for item in client.receive_messages()]


async def test_a_script_stops_saves_and_a_later_one_resumes_with_approval(server, make_options):
    server.enqueue(script.tool_calls([("delete_file", {"path": "old.log"})]),
                   script.text("Done: old.log is gone."))
    session = MemoryHistory()
    async with Client(agent(make_options), session=session) as client:
        await client.query("Clean up old.log")
        await drain(client)
        pending = client.pending_approvals
        assert [p.tool_name for p in pending] == ["delete_file"]
        assert client.turn_metadata["pending_approvals"] == [p.to_dict() for p in pending]
        saved = json.dumps([p.to_dict() for p in pending])  # what a script writes to disk
    assert DELETED == [] and len(server.requests) == 1  # nothing ran, the model was not asked

    async with Client(agent(make_options), session=session) as later:  # e.g. the next day
        (waiting,) = [PendingApproval.from_dict(d) for d in json.loads(saved)]
        assert later.pending_approvals == [waiting]
        later.approve(waiting.tool_use_id)
        items = await drain(later)
    assert DELETED == ["old.log"]
    results = [i for i in items if isinstance(i, ToolResultBlock)]
    assert results[0].content == "deleted old.log" and results[0].decision == "approved"
    assert "".join(i.text for i in items if isinstance(i, TextBlock)) == "Done: old.log is gone."
    assert [m["role"] for m in server.requests[1]["messages"]] == ["user", "assistant", "tool"]
    assert session.messages[-1] == {"role": "assistant", "content": "Done: old.log is gone."}


async def test_deny_sends_the_reason_to_the_model(server, make_options):
    server.enqueue(script.tool_calls([("delete_file", {"path": "/etc/hosts"})]),
                   script.text("Understood, I left it."))
    async with Client(agent(make_options)) as client:
        await client.query("delete hosts")
        await drain(client)
        history = client.message_history
    async with Client(agent(make_options)) as resumed:  # history kept by the script itself
        resumed.message_history = history
        (pending,) = resumed.pending_approvals
        resumed.deny(pending.tool_use_id, "Not the hosts file.")
        await drain(resumed)
    assert DELETED == []
    assert server.requests[1]["messages"][-1]["content"] == "Error: Not the hosts file."


async def test_allowed_calls_run_and_only_the_others_wait(server, make_options):
    server.enqueue(script.tool_calls([("read_file", {"path": "a.txt"}),
                                      ("delete_file", {"path": "b.txt"})]),
                   script.text("Read a, deleted b."))
    options = agent(make_options, permission_rules=[PermissionRule("read_file", "allow")])
    async with Client(options) as client:
        await client.query("read a, delete b")
        items = await drain(client)
        assert [i.content for i in items if isinstance(i, ToolResultBlock)] == ["contents of a.txt"]
        (pending,) = client.pending_approvals
        assert pending.tool_input == {"path": "b.txt"}
        with pytest.raises(ApprovalsPendingError):
            client.message_history = client.message_history  # a reload, nothing answered
            await drain(client)
        client.approve(pending.tool_use_id, updated_input={"path": "b.bak"})
        await drain(client)
    assert DELETED == ["b.bak"]  # the edited input is what ran
    sent = server.requests[1]["messages"]
    # What the model sees next is what ran (ARCHITECTURE: "what the record shows is what ran").
    assert json.loads(sent[1]["tool_calls"][1]["function"]["arguments"]) == {"path": "b.bak"}


async def test_an_inline_approver_can_defer_only_some_calls(server, make_options):
    async def approver(name, tool_input, context):
        return PermissionResultDefer() if name == "delete_file" else PermissionResultAllow()

    server.enqueue(script.tool_calls([("delete_file", {"path": "x"})]))
    async with Client(make_options(tools=[delete_file], auto_execute_tools=True,
                                   can_use_tool=approver)) as client:
        await client.query("delete x")
        await drain(client)
        assert len(client.pending_approvals) == 1
        await client.query("never mind")  # a new prompt drops the pending call
        await drain(client)
        assert client.pending_approvals == []
    assert server.requests[1]["messages"][2]["content"].startswith("Not executed")

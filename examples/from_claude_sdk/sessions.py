"""Sessions from code: resume and fork a stored conversation, undo files, read the result.

    python examples/from_claude_sdk/sessions.py   (LM Studio; set DESKTOP_AGENT_BASE_URL /
                                                   DESKTOP_AGENT_MODEL for another server)

claude-agent-sdk's ``resume`` is ``StoreHistory.resume(id)``, ``fork_session``
is ``StoreHistory.fork(message_id)``, ``enable_file_checkpointing`` is
``AgentOptions(file_checkpoints=FileCheckpoints(folder))`` and
``rewind_files`` is ``Client.rewind_files(turn)``. The conversations here go
into a throw-away database; leave ``path`` out to use the app's own, so a
script continues what the window started.
"""

import asyncio
import os
import tempfile
from pathlib import Path

from desktop_agent import AgentOptions, Client, TextBlock, tool
from desktop_agent.store import StoreHistory
from desktop_agent.workspace import FileCheckpoints

WORK = Path(tempfile.mkdtemp(prefix="sessions-example-"))
DATABASE = WORK / "conversations.db"
FOLDER = WORK / "project"


def options(**more):
    return AgentOptions(
        model=os.environ.get("DESKTOP_AGENT_MODEL", "qwen2.5-7b-instruct"),
        base_url=os.environ.get("DESKTOP_AGENT_BASE_URL", "http://localhost:1234/v1"), **more)


async def ask(client, prompt):
    await client.query(prompt)
    text = "".join([i.text async for i in client.receive_messages() if isinstance(i, TextBlock)])
    result = client.last_result
    print(f"> {prompt}\n{text}\n  [{result.subtype}, {result.num_turns} request(s), "
          f"{result.duration_ms} ms]")


@tool("write_file", "Write a text file in the project", {"path": str, "content": str},
      edits_files=True)
def write_file(args):
    (FOLDER / Path(args["path"]).name).write_text(args["content"])
    return f"wrote {args['path']}"


async def main() -> None:
    session = StoreHistory.open(None, DATABASE)  # a new conversation
    async with Client(options(), session=session) as client:
        await ask(client, "Plan a day in Lyon.")
    conversation_id = session.conversation_id
    session.close()

    session = StoreHistory.resume(conversation_id, DATABASE)  # later, maybe another process
    first = session.store.active_path(conversation_id)[0]
    async with Client(options(), session=session) as client:
        await ask(client, "And a second day?")
    fork = session.fork(first.id)  # a new conversation from the first message on
    async with Client(options(), session=fork) as client:
        await ask(client, "Paris instead, please.")
    print("conversations:", len(session.store.list_conversations()))
    session.close()

    FOLDER.mkdir()
    (FOLDER / "notes.txt").write_text("original\n")
    checkpoints = FileCheckpoints(FOLDER, WORK / "checkpoints")
    async with Client(options(tools=[write_file], auto_execute_tools=True,
                              file_checkpoints=checkpoints)) as client:
        await ask(client, "Write 'draft' into notes.txt.")
        client.rewind_files(1)  # as before the first prompt
    print("notes.txt after rewind:", (FOLDER / "notes.txt").read_text().strip())


if __name__ == "__main__":
    asyncio.run(main())

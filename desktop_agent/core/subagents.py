"""Delegation: the main agent hands a task to a subagent, which answers with its own context.

``AgentOptions(agents={...})`` gives the main agent the ``delegate`` tool
(claude-agent-sdk calls its own ``Task``): ``delegate(agent="reviewer",
prompt="...")`` runs that subagent's own loop, a Client of its own with a clean
history, its definition's prompt, tools (a subset of the main agent's), model
and server, and returns its final answer, with a short summary of what it
changed, as the call's result. Several calls in one reply run at once, up to
``max_concurrent_subagents`` (llama.cpp serves them in parallel slots, another
server serves its own); a subagent may delegate further only while
``max_subagent_depth`` allows (1 by default: subagents do not delegate).

Everything the main agent runs under applies to its subagents, because their
options are the main agent's with only the definition's parts replaced: the
same approver (``can_use_tool``; the question says which subagent asks), rules,
permission mode, hooks (a subagent's Stop is a ``SubagentStop``), sandboxed
tools, secrets redaction and loop guard; the main agent's ``before_tool_round``
(the app's checkpoint of the folder) and file checkpoints run before each of
the subagent's rounds, so what a subagent changes belongs to the main agent's
turn and is undone with it. Stopping the main agent cancels the call, and so
the subagent. What a subagent does streams to the caller as
:class:`~desktop_agent.core.types.SubagentBlock` items under the delegation call.

The subagent's servers are checked at the start of each turn of the main
agent (:meth:`Delegation.check_servers`): one that does not answer is an error
before anything is sent, not a failure in the middle of the work.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from desktop_agent.core import errors
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling.agent_definitions import AgentDefinition, named_definitions
from desktop_agent.core.tooling.progress import report_subagent, running_call_id
from desktop_agent.core.tooling.tools import Tool
from desktop_agent.core.types import (
    StreamItem,
    SubagentBlock,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseError,
    Usage,
)

if TYPE_CHECKING:
    from desktop_agent.core.types import ResultMessage

#: The delegation tool's name.
DELEGATE_TOOL = "delegate"
#: Model requests one delegation may make when its definition names no ``max_turns``.
DEFAULT_SUBAGENT_TURNS = 10
#: Added to a subagent's prompt: it answers once, and its answer is all the caller sees.
CHILD_NOTE = ("You are a subagent: another agent gave you this task. Do it with your tools, "
              "then give your final answer in one message; it is all the other agent sees.")


class ChildClient(Protocol):
    """What delegation needs of a Client (the Client passes its own class)."""

    options: AgentOptions
    turn_metadata: dict[str, Any]
    last_usage: Usage | None
    final_text: str
    last_result: ResultMessage | None

    async def __aenter__(self) -> ChildClient: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def query(self, prompt: Any) -> None: ...

    def receive_messages(self) -> AsyncIterator[StreamItem]: ...


MakeClient = Callable[[AgentOptions], ChildClient]


class SubagentStopped(errors.AgentError):
    """A subagent ended without an answer (the loop guard, a limit); the message says why."""


class Delegation:
    """The main agent's subagents: the ``delegate`` tool and the runs it starts.

    Args:
        parent: Returns the main agent's options as they are now (its mode may
            change during a turn).
        make_client: Makes a subagent's Client from its options.
        parent_turn: Returns the main agent's turn number (for its file checkpoints).
    """

    def __init__(self, parent: Callable[[], AgentOptions], make_client: MakeClient,
                 parent_turn: Callable[[], int]) -> None:
        options = parent()
        self._parent = parent
        self._make_client = make_client
        self._parent_turn = parent_turn
        self.definitions = named_definitions(options.agents)
        self._limit = asyncio.Semaphore(options.max_concurrent_subagents)
        self._servers_up: set[str] = set()

    def tool(self) -> Tool:
        """The ``delegate`` tool, naming each subagent and what it is for."""
        listing = "; ".join(f"{name}: {d.description.strip()}"
                            for name, d in self.definitions.items())
        schema = {"type": "object", "properties": {
            "agent": {"type": "string", "enum": list(self.definitions)},
            "prompt": {"type": "string", "description": "The task, with all it needs to know."},
        }, "required": ["agent", "prompt"]}
        timeout = self._parent().subagent_timeout
        return Tool(DELEGATE_TOOL,
                    "Hand a task to a subagent, which works with its own context and tools "
                    "and answers; calls in one reply run at once. Subagents: " + listing,
                    schema, self._run, read_only=True, source="builtin", timeout=timeout,
                    kwargs_handler=True)

    async def check_servers(self) -> None:
        """Make sure each subagent's own server answers, before the main agent starts.

        Raises:
            ServerConnectionError: A definition's server does not answer (named).
        """
        from desktop_agent.core.servers.discovery import probe_server

        parent = self._parent()
        for name, definition in self.definitions.items():
            url = definition.base_url
            if url is None or url.rstrip("/") == parent.base_url or url in self._servers_up:
                continue
            info = await probe_server(url, api_key=parent.api_key,
                                      timeout=min(5.0, parent.timeout))
            if not info.up:
                raise errors.ServerConnectionError(
                    f"The subagent {name!r} uses the server {url}, which does not answer "
                    f"({info.error}). Start it, or change the subagent's definition.")
            self._servers_up.add(url)

    def child_options(self, definition: AgentDefinition, agent_id: str) -> AgentOptions:
        """The subagent's options: the main agent's, with the definition's parts."""
        parent = self._parent()
        depth = parent.subagent_depth + 1
        available = [t for t in parent.tools if t.name != DELEGATE_TOOL]
        tools = definition.tools_from(available)
        before = self._before_child_round(parent)
        return dataclasses.replace(
            parent, system_prompt=f"{definition.prompt.strip()}\n\n{CHILD_NOTE}", tools=tools,
            model=definition.model or parent.model,
            base_url=definition.base_url or parent.base_url,
            max_turns=definition.max_turns or DEFAULT_SUBAGENT_TURNS,
            auto_execute_tools=True, output_type=None, file_checkpoints=None,
            before_tool_round=before, agent_name=definition.name, agent_id=agent_id,
            subagent_depth=depth,
            agents=parent.agents if depth < parent.max_subagent_depth else None)

    def _before_child_round(self, parent: AgentOptions) -> Any:
        """The main agent's checkpoints, taken before each of a subagent's rounds."""
        app_round = parent.before_tool_round
        files = parent.file_checkpoints
        turn = self._parent_turn

        async def before(calls: Sequence[ToolUseBlock]) -> None:
            if files is not None:
                await files.before_round(turn(), calls)
            if app_round is not None:
                await app_round(calls)

        return before if (app_round is not None or files is not None) else None

    async def _run(self, agent: str, prompt: str) -> str:
        """The ``delegate`` call: run the subagent, return its answer and what it changed."""
        definition = self.definitions.get(agent)
        if definition is None:
            raise errors.ToolInputError(f"There is no subagent {agent!r}; choose one of "
                                        f"{', '.join(self.definitions)}.")
        call_id = running_call_id() or ""
        agent_id = f"{agent}-{uuid.uuid4().hex[:8]}"
        options = self.child_options(definition, agent_id)
        async with self._limit:
            return await _ChildRun(call_id, definition.name, agent_id, options).run(
                self._make_client, prompt)


class _ChildRun:
    """One subagent run: its blocks reported under the call, its answer and changes summed up."""

    def __init__(self, call_id: str, agent: str, agent_id: str, options: AgentOptions) -> None:
        self.call_id = call_id
        self.agent = agent
        self.agent_id = agent_id
        self.options = options
        self.changed: list[str] = []
        self.commands = 0
        self._calls: dict[str, ToolUseBlock] = {}
        self.stopped: str | None = None

    def _report(self, event: str, **fields: Any) -> None:
        report_subagent(SubagentBlock(self.call_id, self.agent, self.agent_id,
                                      event, **fields))  # type: ignore[arg-type]

    async def run(self, make_client: MakeClient, prompt: str) -> str:
        started = time.monotonic()
        self._report("started", model=self.options.model)
        client = make_client(self.options)
        error: str | None = None
        try:
            async with client:
                await client.query(prompt)
                async for item in client.receive_messages():
                    self._note(item)
                    if not isinstance(item, Usage):
                        self._report("block", block=item)
            answer = client.final_text.strip()
            requests = int(client.turn_metadata.get("requests") or 0)
            usage = client.last_usage
            tokens = usage.total_tokens if usage is not None else None
            if self.stopped is not None:
                error = self.stopped
            return self._handed_back(answer, requests, tokens, time.monotonic() - started)
        except BaseException as exc:
            error = error or (str(exc) or type(exc).__name__)
            raise
        finally:
            seconds = time.monotonic() - started
            usage = client.last_usage
            self._report("finished", model=self.options.model,
                         requests=int(client.turn_metadata.get("requests") or 0),
                         tokens=usage.total_tokens if usage is not None else None,
                         seconds=seconds, result=client.final_text.strip() or None,
                         error=error)

    def _note(self, item: StreamItem) -> None:
        """Keep what the summary needs: files the subagent changed, commands it ran, stops."""
        if isinstance(item, ToolUseBlock):
            self._calls[item.id] = item
        elif isinstance(item, ToolResultBlock) and not item.is_error:
            call = self._calls.get(item.tool_use_id)
            tool = self.options.tool_named(item.name or "")
            if call is None or tool is None:
                return
            arguments = item.ran_input or call.input
            if tool.edits_files and isinstance(arguments.get("path"), str):
                if arguments["path"] not in self.changed:
                    self.changed.append(arguments["path"])
            elif not tool.read_only:
                self.commands += 1
        elif isinstance(item, ToolUseError) and item.tool_use_id is None:
            self.stopped = item.error  # the loop guard or a limit ended it

    def _handed_back(self, answer: str, requests: int, tokens: int | None,
                     seconds: float) -> str:
        facts = [f"{requests} request(s)", f"{seconds:.1f} s"]
        if tokens is not None:
            facts.insert(1, f"{tokens:,} tokens")
        changes = (f"changed {', '.join(self.changed)}" if self.changed
                   else "changed no files")
        if self.commands:
            changes += f"; {self.commands} other call(s) that may change things"
        summary = f"[subagent {self.agent} on {self.options.model}: {', '.join(facts)}; {changes}]"
        if self.stopped is not None:
            partial = f"\n\nWhat it had written:\n{answer}" if answer else ""
            raise SubagentStopped(f"The subagent {self.agent} was stopped before it finished: "
                                  f"{self.stopped}{partial}\n\n{summary}")
        return f"{answer or '(the subagent gave no answer)'}\n\n{summary}"

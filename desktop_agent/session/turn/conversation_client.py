"""The conversation's core client: made on its first turn, given fresh options every turn.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
The client is kept between turns (its HTTP connections stay warm, its context
keeper remembers a compacted view) and closed with the session. Each turn
builds its options from the settings as they are then
(:func:`~desktop_agent.session.turn.options.build_options`), with the approval
broker, the file-change hooks and a checkpoint of the working folder before
each tool round that may change it. Its model doctor
(:mod:`~desktop_agent.session.turn.model_doctor`) sees each turn's options before
and after the turn, and runs the tool-call probe on demand.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.tooling.hooks import HOOK_NOTIFICATION
from desktop_agent.session.events import Notice, SessionEvent
from desktop_agent.session.settings.setting_values import runs_locally
from desktop_agent.session.turn.local_server import (
    NO_ENGINE,
    LocalModelUnavailableError,
    LocalServerFacts,
)
from desktop_agent.session.turn.options import OptionsRead, SessionEnvironment, build_options

if TYPE_CHECKING:
    from desktop_agent.core.client import Client
    from desktop_agent.core.tooling.mcp.server_requests import SamplingReply, SamplingRequest
    from desktop_agent.core.tooling.probe_result import ProbeResult
    from desktop_agent.core.types import ToolUseBlock
    from desktop_agent.session.approvals.approval_broker import ApprovalBroker
    from desktop_agent.session.files.command_previews import CommandPreviewDesk
    from desktop_agent.session.files.file_checkpoints import TurnMark
    from desktop_agent.session.files.working_folder import WorkingFolder
    from desktop_agent.session.mcp.conversation_mcp import ConversationMcp
    from desktop_agent.session.settings.settings_record import SettingsRecord
    from desktop_agent.session.turn.model_doctor import ModelDoctor
    from desktop_agent.store import Store

OptionsReadFor = tuple[Mapping[str, Any], OptionsRead | Exception]
"""Settings, and what :func:`~desktop_agent.session.turn.options.read_for_options` made of them."""


class ConversationClient:
    """Holds the conversation's :class:`~desktop_agent.core.client.Client`.

    Args:
        settings: The conversation's record (its settings make the options).
        env: What all conversations share (tools, config, hooks).
        broker: Decides the turn's tool calls.
        folder: The working folder (file-change hooks, checkpoints before tool rounds).
        previews: The command previews (the bash tool's preview mode).
        emit: Reports session events.
        store: Where the model doctor keeps tool-call probe results.
        mcp: The MCP servers as the conversation uses them (their sampling,
            forms and roots are answered for it).

    """

    def __init__(self, settings: SettingsRecord, env: SessionEnvironment,
                 broker: ApprovalBroker, folder: WorkingFolder, previews: CommandPreviewDesk,
                 emit: Callable[[SessionEvent], None], store: Store,
                 mcp: ConversationMcp) -> None:
        self._store = store
        self.mcp = mcp
        self._doctor: ModelDoctor | None = None
        self._settings = settings
        self._env = env
        self._broker = broker
        self._folder = folder
        self._previews = previews
        self._emit = emit
        self._client: Client | None = None
        self._stopped_calls: set[str] = set()  # commands ended by Stop on their card
        self._reported_problems: list[str] = []
        self._notification_hooks: dict[str, list[Any]] = {HOOK_NOTIFICATION: []}

    @property
    def doctor(self) -> ModelDoctor:
        """The model doctor, made on first use.

        Why lazy: it imports the core's probe, request and schema modules (openai,
        pydantic, jsonschema), which a window must not load before its first paint;
        the first turn needs them anyway.
        """
        if self._doctor is None:
            from desktop_agent.session.turn.model_doctor import ModelDoctor

            self._doctor = ModelDoctor(self._store, self._emit)
        return self._doctor

    @property
    def client(self) -> Client | None:
        """The conversation's client once a turn ran."""
        return self._client

    def local_server(self) -> AbstractAsyncContextManager[LocalServerFacts | None]:
        """The engine's server for the turn when the model runs on this computer, else None.

        Entering starts the model if it is not running (the conversation is told) and
        keeps it loaded until the block ends.

        Raises:
            LocalModelUnavailableError: The model runs on this computer and this
                program has no engine, or the engine cannot serve it.
        """
        settings = self._settings.current
        if not runs_locally(settings):
            return contextlib.nullcontext(None)
        if self._env.local_servers is None:
            raise LocalModelUnavailableError(NO_ENGINE)
        return self._env.local_servers.use(str(settings.get("model") or ""), self._emit)

    async def ready(self, mark: TurnMark, read: OptionsReadFor | None = None,
                    local: LocalServerFacts | None = None) -> Client:
        """The conversation's client with options built from its current settings.

        ``read``: what the start read for them (settings, then the read or its error),
        used while the settings are still those. ``local``: the engine's server, for a
        model on this computer (:meth:`local_server`).
        """
        settings = self._settings.current
        read_problems: list[str] = []
        options = await build_options(
            self._settings.conversation_id, settings, self._env, self._broker,
            self._folder.changes.hooks(self._env.hooks),
            read=read[1] if read is not None and read[0] is settings else None, local=local,
            previews=self._previews.mode(settings), problems=read_problems)
        tool_named = options.tool_named
        folder = self._folder

        async def before_round(calls: Sequence[ToolUseBlock]) -> None:
            await folder.checkpoints.before_round(mark, calls, tool_named)

        options.before_tool_round = before_round
        mcp = self.mcp
        options.sampling_callback = mcp.sampling
        options.elicitation_callback = mcp.questions.elicitation
        # The working folder was read (and checked) off the loop with the options: a
        # second hand-off to a thread per turn, only to read it again, is left to turns
        # without one (no built-in tool, no hook).
        options.mcp_roots = ((Path(options.cwd),) if options.cwd is not None
                             else await asyncio.to_thread(mcp.roots))
        options.refresh_tools = self._env.tools.refresher(options.tools, settings)
        # Notification hooks hear that a *person* is asked: the broker tells them when it
        # shows a question (the core would tell them of every approver call, asked or not).
        self._notification_hooks = {HOOK_NOTIFICATION: list(
            (options.hooks or {}).get(HOOK_NOTIFICATION, ()))}
        if options.hooks:
            options.hooks = {k: v for k, v in options.hooks.items() if k != HOOK_NOTIFICATION}
        problems = [*self._env.tools.mcp_problems(), *read_problems]
        if problems and problems != self._reported_problems:
            self._reported_problems = problems
            self._emit(Notice(" ".join(problems)))
        self.doctor.before_turn(options)
        if self._client is None:
            from desktop_agent.core.client import Client

            self._client = Client(options)
        else:
            self._client.update_options(options)
        return self._client

    async def notify(self, tool_name: str, tool_use_id: str, agent: str | None) -> None:
        """A person is asked about a call: tell the Notification hooks (claude-agent-sdk's)."""
        client = self._client
        if client is None or not self._notification_hooks[HOOK_NOTIFICATION]:
            return
        from desktop_agent.core.tooling.hooks import NotificationEvent, stamped, tell_hooks

        who = f"The subagent {agent!r}" if agent else "The agent"
        await tell_hooks(self._notification_hooks, HOOK_NOTIFICATION, stamped(
            NotificationEvent(f"{who} needs your permission to use {tool_name}",
                              "Approval needed", tool_name, tool_use_id), client.options))

    def after_turn(self) -> None:
        """The turn ended well: the doctor says what it showed (once per model)."""
        if self._client is not None:
            self.doctor.after_turn(self._client.options)

    def release_history(self) -> None:
        """Let the client's copy of the history go (between turns only).

        Each turn gives the client the history again from the stored branch;
        its context keeper keeps the compacted view by fingerprint, not by
        holding the messages.
        """
        client = self._client
        if client is not None and not client.is_running:
            client.message_history = []

    async def test_model(self) -> ProbeResult:
        """Run the tool-call probe on the conversation's server and model (*Test this model*).

        Raises:
            MissingApiKeyError: The conversation names a key that is not stored.
            ConfigurationError: No server or model is chosen.
        """
        options = await build_options(self._settings.conversation_id, self._settings.current,
                                      self._env, None)
        return await self.doctor.test_model(options)

    def stop_tool_call(self, tool_use_id: str) -> bool:
        """End just one running command (Stop on its card); the turn goes on.

        Returns:
            False when no such call runs or it cannot be stopped.
        """
        client = self._client
        if client is None or not client.stop_tool_call(tool_use_id):
            return False
        self._stopped_calls.add(tool_use_id)  # its stored result says who ended it
        return True

    def stopped_by_person(self, tool_use_id: str) -> bool:
        """Whether a person ended this call with Stop on its card."""
        return tool_use_id in self._stopped_calls

    async def sample(self, request: SamplingRequest) -> SamplingReply:
        """Run an MCP server's sampling request on the conversation's model.

        Raises:
            ServerRequestRefused: No turn has made the client yet.
        """
        if self._client is None:
            from desktop_agent.core.tooling.mcp.server_requests import ServerRequestRefused

            raise ServerRequestRefused("The conversation has no model client yet; send a "
                                       "message first.")
        return await self._client.sample(request)

    async def close(self) -> None:
        """Release the client and its connections (a background probe stops first)."""
        self.mcp.questions.withdraw_all()
        if self._doctor is not None:
            await self._doctor.aclose()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

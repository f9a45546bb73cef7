"""AgentOptions: everything a query or a Client needs, checked on construction.

The public face of the settings. Each wing of the core reads only its part,
declared as a Protocol in that wing (``WireSettings`` in
:mod:`~desktop_agent.core.wire.wire_settings`, ``ContextSettings`` in
:mod:`~desktop_agent.core.context.context_settings`, ``ToolingSettings`` in
:mod:`~desktop_agent.core.tooling.tooling_settings`), which ``AgentOptions``
has by its fields; the turn loop above hands it to each of them. So this
module imports the wings and no wing imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context.context_settings import COMPACTION_MODES, CompactionMode
from desktop_agent.core.errors import ConfigurationError
from desktop_agent.core.tooling.agent_definitions import AgentDefinition, named_definitions
from desktop_agent.core.tooling.hooks import Hooks, merge_hooks, validate_hooks
from desktop_agent.core.tooling.mcp.server_requests import (
    DEFAULT_SAMPLING_LIMIT,
    ElicitationCallback,
    SamplingCallback,
)
from desktop_agent.core.tooling.permissions import (
    PERMISSION_MODES,
    CanUseTool,
    PermissionMode,
    PermissionRule,
)
from desktop_agent.core.tooling.plan_mode import tools_for_mode
from desktop_agent.core.tooling.tooling_settings import (
    BeforeToolRound,
    ConstrainedCalls,
    FileCheckpointer,
    RefreshTools,
)
from desktop_agent.core.tooling.tools import Tool, tool_named
from desktop_agent.core.wire.retry import RetryPolicy
from desktop_agent.core.wire.wire_settings import TextDeltaMode, TextToolCalls

if TYPE_CHECKING:
    from desktop_agent.core.wire.connection_pool import ConnectionPool


@dataclass
class AgentOptions:
    """Settings for one agent.

    Attributes:
        system_prompt: Sent first in every request; not part of ``Client.history``.
        model: The model id as the server knows it.
        base_url: The server's OpenAI-compatible root, e.g. ``http://localhost:1234/v1``.
        tools: Tools the model may call (names must be unique).
        max_turns: Model requests one query may make (claude-agent-sdk's agent
            turns: the first reply plus one per tool round); None means no
            limit beyond ``max_tool_iterations``. It never limits how many
            queries a Client accepts: a Client is a conversation of any length.
        max_tokens: Completion limit per request; None leaves it to the server.
        temperature: Sampling temperature; None leaves it to the server.
        timeout: Seconds to wait for the server (connect and between chunks).
        api_key: Bearer token; local servers usually need none.
        auto_execute_tools: Run tool calls and feed results back automatically.
        max_tool_iterations: Rounds of tool execution per turn in auto mode.
        hooks: ``{HOOK_...: [handler, ...]}``.
        allowed_tools: Tool name globs that run without asking.
        disallowed_tools: Tool name globs that never run.
        permission_rules: Finer allow/ask/deny rules by name and arguments.
        can_use_tool: Async approval callback for calls no rule settles.
        approval_timeout: Seconds the approval callback may take; then deny.
        tool_timeout: Default seconds one tool execution may take.
        doom_loop_threshold: Consecutive repeats of a call (identical, or with trivially
            different arguments) that make a loop; the model is told once, then the
            turn stops (0 disables; :mod:`.tooling.loop_guard`).
        retry: Backoff policy for connection errors, 429 and 5xx.
        text_delta_mode: ``auto`` detects servers that resend the whole text.
        text_tool_calls: ``auto`` reads tool calls a model wrote as text
            (``<tool_call>``, ``[TOOL_CALLS]``, ``<|python_tag|>``,
            ``<function=...>``) when the server sent no native calls; ``off``
            leaves such text as it is.
        constrained_tool_calls: Make the server produce only valid calls of
            the offered tools or a plain answer, through constrained decoding
            (``response_format`` with a JSON schema; llama.cpp, LM Studio,
            vLLM, Ollama). For small models that misspell tools or
            arguments, or never write a native call. The tools are then
            described in the system prompt instead of the ``tools`` field.
            ``"auto"`` (the default) uses it where the server supports it and
            the model is not known to call tools natively (the server is asked
            once per model); True always, False never. A server that refuses
            the field is asked without it, and that is remembered for the
            model (see :mod:`~desktop_agent.core.tooling.tool_call_mode`).
        tool_decision: Under constrained calls, ask the model first, in a short
            request of its own, whether one of the tools it could call does what
            the person asks, and hold the reply to an answer when it says no (the
            model's habit of saying yes or no is measured on an empty request and
            taken out). One more request of one token per message of the person
            that names a tool's job, plus one per set of tools; a server that
            gives no ``logprobs`` is not asked again. See
            :mod:`~desktop_agent.core.tooling.tool_decision`.
        extra_body: Extra request fields (``top_p``, ``seed``, ``stop``...).
        extra_headers: Extra HTTP headers.
        context_length: The model's context window, when known. With it, each
            request is checked before it is sent and compacted when it nears
            the window (see ``compaction``).
        compaction: What to do when a request nears ``context_length``:
            ``summarise`` the oldest messages by the same model (falling back
            to dropping them), ``drop_oldest`` whole exchanges, or ``off``.
            Only the request changes; the history keeps every message.
        compaction_threshold: The share of ``context_length`` (prompt plus
            the reply's reserve) past which a request is compacted.
        tool_result_budget: Tokens one tool result may take in a request; a
            longer one reaches the model cut, with a note on how to read on.
            None means a quarter of ``context_length`` (4,000 when unknown).
        vision: Whether the model reads images: True, False (a prompt with a
            picture raises ``VisionNotSupportedError`` before anything is
            sent), or None when unknown (sent; a server's refusal becomes
            that error too).
        output_type: A pydantic model (or any type pydantic validates) that
            each query's final answer must match; ``Client.last_output`` and
            ``await query(...)`` give the validated object. See
            :mod:`desktop_agent.core.structured_output`.
        output_retries: Replies that may be sent back for correction before
            ``StructuredOutputError``.
        secret_values: Values blanked out of every tool result and error (the
            conversation's secrets; ``api_key`` is always included).
        connection_pool: HTTP connections shared with other Clients, one pool
            per model server (see :mod:`~desktop_agent.core.wire.connection_pool`);
            None gives this Client connections of its own.
        before_tool_round: Awaited with a round's calls before any of them
            runs (after the reply that asked for them): an app records what
            the tools may change (a checkpoint of the working folder) here.
            It runs even when every call is then denied; what it raises ends
            the turn, so a caller that must not stop the turn catches its own.
        sampling_callback: Answers an MCP server's ``sampling/createMessage``
            during this agent's tool calls (ask the person first, then run the
            model: ``Client.sample`` runs it with these options). None: such
            requests are refused with a sentence the server sees.
        elicitation_callback: Shows an MCP server's ``elicitation/create`` (a
            form or a link) to the person and returns the answer. None: refused.
        mcp_roots: The folders MCP servers may work in (``roots/list``); when they
            differ from what a server was told, it gets ``roots/list_changed``.
        sampling_limit: Sampling requests one server may make per turn; more are
            refused at once (a server that sends a thousand gets this many asked).
        refresh_tools: Awaited before each model request; returns a new tool list
            (an MCP server's tools changed) or None. The new list is offered
            from that request on.
        permission_mode: claude-agent-sdk's four modes: ``default`` (rules,
            then ``can_use_tool``), ``acceptEdits`` (file edits in the working
            folder run unasked), ``plan`` (only read-only tools run; the model
            is told to hand in a plan with ``exit_plan_mode``, whose approval
            switches to ``default`` or ``acceptEdits``) or
            ``bypassPermissions`` (everything runs but deny rules; a tool no
            sandbox holds is still asked). See
            :func:`~desktop_agent.core.tooling.permissions.apply_permission_mode`.
        agent_name: The subagent these options run (None: the main agent);
            approvers are told who asks.
        agent_id: That subagent's run (its events and SubagentStop hooks carry it).
        cwd: The agent's working folder, when it has one (claude-agent-sdk's
            ``cwd``): hooks are told it. The built-in tools get theirs from
            :func:`~desktop_agent.core.tooling.builtin.builtin_tools`.
        session_id: The conversation's id, for hooks (a store-backed session
            gives its own when this is None).
        agents: Subagents the agent may delegate to, by name (claude-agent-sdk's
            ``agents``): the agent gets the ``delegate`` tool
            (:mod:`~desktop_agent.core.subagents`). Each definition's tools must
            be the agent's (checked here).
        max_subagent_depth: How deep delegation may go: 1 (the default) lets
            the agent delegate and its subagents not.
        max_concurrent_subagents: Subagents that may run at once (several
            delegate calls in one reply); the rest wait their turn.
        subagent_timeout: Seconds one delegation may take.
        subagent_depth: The depth these options run at (0: the main agent; set
            for subagents by the delegation).
        skills_dirs: Folders of skills (each skill a folder with a ``SKILL.md``, the
            format the app reads; first found wins): their names and descriptions
            go into the system prompt and the model loads one with the
            ``load_skill`` tool (allowed unasked: it only reads the skill's files).
            Read again at each query, so a skill added meanwhile is offered.
        commands_dirs: Folders of slash commands (``review.md`` is ``/review``,
            the app's format: ``$ARGUMENTS``, ``$1``...): a string prompt starting
            with ``/name`` of one of them is sent as the command's text.
        file_checkpoints: Checkpoints of the agent's folder, taken before each
            tool round so ``Client.rewind_files(turn)`` can undo what turns
            changed (claude-agent-sdk's ``enable_file_checkpointing``; give it
            ``desktop_agent.FileCheckpoints(cwd)``).
    """

    model: str
    base_url: str
    system_prompt: str | None = None
    tools: Sequence[Tool] = field(default_factory=list)
    max_turns: int | None = None
    max_tokens: int | None = 4096
    temperature: float | None = 0.7
    timeout: float = 60.0
    api_key: str = field(default="not-needed", repr=False)
    auto_execute_tools: bool = False
    max_tool_iterations: int = 5
    hooks: Hooks | None = None
    allowed_tools: Sequence[str] = field(default_factory=list)
    disallowed_tools: Sequence[str] = field(default_factory=list)
    permission_rules: Sequence[PermissionRule] = field(default_factory=list)
    can_use_tool: CanUseTool | None = None
    approval_timeout: float | None = 300.0
    tool_timeout: float = 60.0
    doom_loop_threshold: int = 3
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    text_delta_mode: TextDeltaMode = "auto"
    text_tool_calls: TextToolCalls = "auto"
    constrained_tool_calls: ConstrainedCalls = "auto"
    tool_decision: bool = False
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    context_length: int | None = None
    compaction: CompactionMode = "summarise"
    compaction_threshold: float = 0.8
    tool_result_budget: int | None = None
    vision: bool | None = None
    secret_values: Sequence[str] = field(default=(), repr=False)
    output_type: Any = None
    output_retries: int = 2
    connection_pool: ConnectionPool | None = field(default=None, repr=False, compare=False)
    before_tool_round: BeforeToolRound | None = field(default=None, repr=False, compare=False)
    sampling_callback: SamplingCallback | None = field(default=None, repr=False, compare=False)
    elicitation_callback: ElicitationCallback | None = field(default=None, repr=False,
                                                             compare=False)
    mcp_roots: Sequence[Path] = field(default=())
    skills_dirs: Sequence[str | Path] = field(default=())
    commands_dirs: Sequence[str | Path] = field(default=())
    sampling_limit: int = DEFAULT_SAMPLING_LIMIT
    refresh_tools: RefreshTools | None = field(default=None, repr=False, compare=False)
    permission_mode: PermissionMode = "default"
    agent_name: str | None = None
    agent_id: str | None = None
    cwd: str | None = None
    session_id: str | None = None
    file_checkpoints: FileCheckpointer | None = field(default=None, repr=False, compare=False)
    agents: Mapping[str, AgentDefinition] | None = None
    max_subagent_depth: int = 1
    max_concurrent_subagents: int = 2
    subagent_timeout: float = 1800.0
    subagent_depth: int = 0

    def __post_init__(self) -> None:
        self._check_endpoint()
        self._check_limits()
        self._check_modes()
        self._check_tools()

    def _check_endpoint(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigurationError("model must be a non-empty model id")
        if not isinstance(self.base_url, str) or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise ConfigurationError(
                f"base_url must start with http:// or https:// (got {self.base_url!r})"
            )
        self.base_url = self.base_url.rstrip("/")

    def _check_limits(self) -> None:
        for name in ("max_turns", "max_tokens", "context_length", "tool_result_budget"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(
                    f"{name} must be a positive integer or None, not {value!r}")
        for name in ("max_tool_iterations", "output_retries", "sampling_limit"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"{name} must be 0 or more")
        if self.doom_loop_threshold < 0:
            raise ConfigurationError("doom_loop_threshold must be 0 or more")
        if self.timeout is None or self.timeout <= 0:
            raise ConfigurationError("timeout must be a positive number of seconds")
        if self.tool_timeout <= 0:
            raise ConfigurationError("tool_timeout must be a positive number of seconds")
        if self.approval_timeout is not None and self.approval_timeout <= 0:
            raise ConfigurationError("approval_timeout must be positive or None")

    def _check_modes(self) -> None:
        if self.permission_mode not in PERMISSION_MODES:
            raise ConfigurationError(
                f"permission_mode must be one of {', '.join(PERMISSION_MODES)}, "
                f"not {self.permission_mode!r}")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ConfigurationError("temperature must be between 0 and 2")
        if self.text_delta_mode not in ("auto", "incremental", "cumulative"):
            raise ConfigurationError("text_delta_mode must be auto, incremental or cumulative")
        if self.text_tool_calls not in ("auto", "off"):
            raise ConfigurationError("text_tool_calls must be auto or off")
        if self.constrained_tool_calls not in (True, False, "auto") or \
                (isinstance(self.constrained_tool_calls, int | float) and \
                not isinstance(self.constrained_tool_calls, bool)):
            raise ConfigurationError("constrained_tool_calls must be True, False or 'auto'")
        if not isinstance(self.tool_decision, bool):
            raise ConfigurationError("tool_decision must be True or False")
        _check_compaction(self.compaction, self.compaction_threshold)

    def _check_tools(self) -> None:
        self.mcp_roots = tuple(Path(p) for p in self.mcp_roots)
        if isinstance(self.skills_dirs, (str, Path)) or \
                isinstance(self.commands_dirs, (str, Path)):
            raise ConfigurationError("skills_dirs and commands_dirs are lists of folders "
                                     "(skills_dirs=['skills'], not skills_dirs='skills')")
        self.skills_dirs = tuple(Path(p) for p in self.skills_dirs)
        self.commands_dirs = tuple(Path(p) for p in self.commands_dirs)
        self.tools = tools_for_mode(list(self.tools), self.permission_mode)
        seen: set[str] = set()
        for t in self.tools:
            if not isinstance(t, Tool):
                raise ConfigurationError(f"tools must be Tool objects, got {t!r}")
            if t.name in seen:
                raise ConfigurationError(f"duplicate tool name {t.name!r}")
            seen.add(t.name)
        try:
            validate_hooks(self.hooks)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        if self.hooks:  # claude-agent-sdk's names ("Stop") and ours ("stop") as one
            self.hooks = merge_hooks(self.hooks)
        self._check_agents()

    def _check_agents(self) -> None:
        """Definitions named well, with the agent's tools, and sane limits (not mid-turn)."""
        for name in ("max_subagent_depth", "max_concurrent_subagents"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive whole number")
        if self.subagent_timeout <= 0:
            raise ConfigurationError("subagent_timeout must be a positive number of seconds")
        if not self.agents:
            return
        definitions = named_definitions(self.agents)  # raises for a malformed entry
        if self.subagent_depth == 0:
            own = [t for t in self.tools if t.name != "delegate"]
            for definition in definitions.values():
                definition.tools_from(own)  # raises, naming the unknown tool

    def tool_named(self, name: str) -> Tool | None:
        """The tool called ``name``, if the agent has one."""
        return tool_named(self.tools, name)


def _check_compaction(mode: str, threshold: float) -> None:
    if mode not in COMPACTION_MODES:
        raise ConfigurationError("compaction must be summarise, drop_oldest or off")
    if not isinstance(threshold, int | float) or not 0.1 <= threshold <= 1:
        raise ConfigurationError("compaction_threshold must be between 0.1 and 1")

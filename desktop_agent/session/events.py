"""Typed events a conversation's session reports to its front end.

The session is :class:`~desktop_agent.session.conversation.ConversationSession`.

The window turns them into Qt signals, the REST server into its event log and
SSE stream; neither parses the core's blocks or knows how a turn is recorded.
Each event is a small frozen dataclass; :data:`SessionEvent` is their union.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from desktop_agent.core.servers.context_window import ContextWindow
    from desktop_agent.core.servers.window_fix import WindowFix
    from desktop_agent.core.tooling.probe_result import ProbeResult
    from desktop_agent.core.types import CompactionBlock, PromptCutBlock, Usage
    from desktop_agent.session.approvals.approval_broker import ToolCallQuestion
    from desktop_agent.session.files.preview_cards import PreviewCard
    from desktop_agent.session.mcp.server_question import ServerQuestion
    from desktop_agent.session.tools.plan import Plan
    from desktop_agent.store import MessageRecord
    from desktop_agent.workspace.checkpoints import TurnChanges

RunState = Literal["idle", "running", "waiting_approval", "interrupting"]
Outcome = Literal["complete", "interrupted", "error"]


@dataclass(frozen=True, slots=True)
class StateChanged:
    """The run state moved; ``outcome`` is set when a turn ended (state ``idle``)."""

    state: RunState
    outcome: Outcome | None = None


@dataclass(frozen=True, slots=True)
class UserMessageAdded:
    """A user message was stored (sent, or added to be answered later)."""

    record: MessageRecord


@dataclass(frozen=True, slots=True)
class PathReset:
    """Show these messages instead of what is shown (branch switch, another process wrote)."""

    records: tuple[MessageRecord, ...]


@dataclass(frozen=True, slots=True)
class ReplyStarted:
    """An assistant message was opened in the store (the first of a turn or after tools)."""

    message_id: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the visible answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of reasoning."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model called a tool (arguments as the model wrote them)."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    source: str | None


@dataclass(frozen=True, slots=True)
class ToolInputReplaced:
    """The call ran with another input (edited at approval): show and keep that one."""

    tool_use_id: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResultArrived:
    """A call's result; ``reported`` is True when a ToolErrorReported already said it.

    ``user_content`` is meant for the person only (MCP ``audience: ["user"]``);
    ``images`` counts the pictures the tool returned and ``pictures`` holds them
    (``data:`` URIs) for a front end to show.
    """

    tool_use_id: str
    name: str | None
    content: str
    is_error: bool
    reported: bool = False
    user_content: str | None = None
    images: int = 0
    pictures: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolProgressReported:
    """How far a running call is (MCP progress notifications)."""

    tool_use_id: str
    name: str | None
    progress: float
    total: float | None
    message: str | None


@dataclass(frozen=True, slots=True)
class ToolOutputReported:
    """What a running command printed since the last report (a bounded tail, secrets blanked).

    ``lines`` counts every line printed so far and ``elapsed`` the seconds
    since it started; ``stoppable`` says :meth:`ConversationSession.stop_tool_call`
    can end just this call. The model never gets these: it gets the result.
    """

    tool_use_id: str
    name: str | None
    text: str
    lines: int
    elapsed: float
    stoppable: bool


@dataclass(frozen=True, slots=True)
class ToolErrorReported:
    """A call that could not be used or was refused, or a stop of the tool loop."""

    error: str
    tool_use_id: str | None
    name: str | None
    raw_data: str | None


@dataclass(frozen=True, slots=True)
class PromptProgressReported:
    """How much of the prompt the server has read, before the first token."""

    processed: int
    total: int


@dataclass(frozen=True, slots=True)
class CompactionReported:
    """The model's view of the conversation was compacted (see core.compaction)."""

    block: CompactionBlock


@dataclass(frozen=True, slots=True)
class PromptCutReported:
    """The server read less of the last request than it was sent, without an error.

    The reply it came with is marked (``block.message``; stored in the reply's
    metadata as ``prompt_cut``); the next request is compacted to fit.
    """

    block: PromptCutBlock


@dataclass(frozen=True, slots=True)
class ContextWindowChecked:
    """Before a turn: what the next request needs against the window the server applies.

    Attributes:
        model: The model the window is of.
        window: The applied window, the trained length and where the figure came from.
        needed: Tokens the request needs whole (system prompt with AGENTS.md, tool
            schemas, history, the new message, the reply).
        fixed: Of those, what every request carries (system prompt and schemas).
        warning: The sentence to show before sending, with the fix; None when it fits.
        fix: How to give the model a larger window (on Ollama ``fix.ollama_model``
            is made in one click by ``ConversationSession.make_larger_window``).
        reply: Of ``needed``, the tokens kept for the reply.
    """

    model: str
    window: ContextWindow
    needed: int
    fixed: int
    warning: str | None
    fix: WindowFix | None
    reply: int = 0


@dataclass(frozen=True, slots=True)
class UsageReported:
    """The turn's figures (tokens, speed)."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class MessageStored:
    """A message of the turn is complete in the store (its final shape)."""

    record: MessageRecord


@dataclass(frozen=True, slots=True)
class ReplyEnded:
    """The turn's reply ended (``interrupted``: stopped, or failed part way)."""

    interrupted: bool


@dataclass(frozen=True, slots=True)
class TurnFailed:
    """The turn failed; front ends map the error's type to a sentence."""

    error: BaseException


@dataclass(frozen=True, slots=True)
class ApprovalAsked:
    """A call waits for a person or a script."""

    question: ToolCallQuestion


@dataclass(frozen=True, slots=True)
class ApprovalSettled:
    """A question ended without an answer (expired, withdrawn); ``record`` says how."""

    tool_use_id: str
    record: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SettingsChanged:
    """The conversation's settings now are these."""

    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TitleChanged:
    """The conversation's title now is this."""

    title: str


@dataclass(frozen=True, slots=True)
class ResourcesChanged:
    """MCP resources attached earlier changed, and were read again for this turn.

    Attributes:
        resources: ``(server, uri)`` of each.
        text: The sentence shown on the reply (the window) and in the REST event.
    """

    resources: tuple[tuple[str, str], ...]
    text: str


@dataclass(frozen=True, slots=True)
class Notice:
    """Something a person should know that is not part of the transcript."""

    text: str


@dataclass(frozen=True, slots=True)
class FilesChanged:
    """A turn (or a restore) changed files of the working folder; it can be undone."""

    changes: TurnChanges


@dataclass(frozen=True, slots=True)
class CommandPreviewReady:
    """A command ran on an overlay; what it would change waits for Apply or Discard."""

    card: PreviewCard


@dataclass(frozen=True, slots=True)
class CommandPreviewSettled:
    """A preview was applied or discarded (``text``: what the model reads of it).

    ``outcome`` is ``applied`` (``text`` may say "partly applied: ...") or ``discarded``.
    """

    preview_id: str
    tool_use_id: str | None
    outcome: Literal["applied", "discarded"]
    text: str


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    """The model set a new plan (an ``update_plan`` call ran); show it instead of the old."""

    plan: Plan


@dataclass(frozen=True, slots=True)
class LocalModelStarting:
    """The turn waits for the model on this computer to load (it was not running).

    Attributes:
        model: The model's name as a person knows it.
    """

    model: str


@dataclass(frozen=True, slots=True)
class LocalModelCrashed:
    """The engine running this conversation's model on this computer ended unasked.

    The reply it was writing ends as interrupted (as with any server that goes
    away); this says why, so a front end can name the signal and offer Restart.

    Attributes:
        model: The model's name as a person knows it.
        message: The sentence to show (how it ended, with advice).
        signal_name: ``SIGKILL``, ``SIGSEGV``... when a signal ended it, else None.
        returncode: The process's return code (negative: the signal's number).
    """

    model: str
    message: str
    signal_name: str | None
    returncode: int


DoctorNoticeKind = Literal["template_without_tools", "slow_prompt"]


@dataclass(frozen=True, slots=True)
class DoctorNotice:
    """The model doctor found something about the model a person should know, and what helps.

    ``kind``: ``template_without_tools`` (the server drops the tools: constrained
    calls are used) or ``slow_prompt`` (the fixed prompt takes over 5 s to process);
    ``offers``: ``(id, sentence)`` of what helps (``prompt_cache``, ``fewer_tools``,
    ``constrained_schemas``).
    """

    kind: DoctorNoticeKind
    text: str
    offers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCallProbed:
    """The tool-call probe measured the model; ``mode`` is the reason the mode now gives."""

    base_url: str
    model: str
    result: ProbeResult
    mode: str


@dataclass(frozen=True, slots=True)
class SamplingAsked:
    """An MCP server asks to run the conversation's model; a person allows or denies."""

    question: ServerQuestion


@dataclass(frozen=True, slots=True)
class ElicitationAsked:
    """An MCP server asks the person to fill a form (or open a link)."""

    question: ServerQuestion


@dataclass(frozen=True, slots=True)
class ServerQuestionSettled:
    """A server's question ended: ``outcome`` is the answer, ``expired`` or ``withdrawn``."""

    question_id: str
    outcome: str


SubagentStep = Literal["started", "text", "thinking", "tool_call", "tool_result", "tool_error",
                      "tool_output", "finished"]


@dataclass(frozen=True, slots=True)
class SubagentReported:
    """What a subagent did, under the delegation call that started it (plain values).

    ``step`` says what: ``started`` (with ``model``), ``text``/``thinking`` (a
    delta in ``text``), ``tool_call`` (``call_id``, ``name``, ``input``),
    ``tool_result``/``tool_error`` (``call_id``, ``name``, ``text``, ``is_error``),
    ``tool_output`` (a command's output in ``text``), ``finished`` (``model``,
    ``requests``, ``tokens``, ``seconds``, the answer in ``text`` or why it
    stopped in ``error``).
    """

    tool_use_id: str
    agent: str
    agent_id: str
    step: SubagentStep
    text: str = ""
    call_id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None
    is_error: bool = False
    model: str | None = None
    requests: int = 0
    tokens: int | None = None
    seconds: float = 0.0
    error: str | None = None


SessionEvent = (StateChanged | UserMessageAdded | PathReset | ReplyStarted | TextDelta
                | ThinkingDelta | ToolCallStarted | ToolInputReplaced | ToolResultArrived
                | ToolProgressReported | ToolOutputReported | PromptProgressReported
                | CompactionReported | PromptCutReported | ContextWindowChecked
                | ToolErrorReported | UsageReported | MessageStored | ReplyEnded | TurnFailed
                | ApprovalAsked | ApprovalSettled | SettingsChanged | TitleChanged | Notice
                | ResourcesChanged | FilesChanged | PlanUpdated | DoctorNotice | ToolCallProbed
                | SamplingAsked | ElicitationAsked | ServerQuestionSettled
                | LocalModelStarting | LocalModelCrashed
                | CommandPreviewReady | CommandPreviewSettled | SubagentReported)

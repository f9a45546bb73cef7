"""Request and response bodies of the REST API.

These pydantic models are the API's contract: FastAPI builds ``/openapi.json``
from them, validates input against them and serialises output through them.
Settings are :class:`desktop_agent.session.settings.conversation_settings.ConversationSettings`, the
schema the window uses too, so a conversation made here opens in the window
with the same server, model and tools.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

# The one schema of a conversation's settings (the window's dialog and import use it too).
from desktop_agent.session import DEFAULT_TITLE, ConversationSettings
from desktop_agent.store import refuse_nul

from .message_content import MessageContent
from .preview_models import PreviewOut

EventType = Literal[
    "message",
    "text",
    "thinking",
    "tool_call",
    "approval_requested",
    "approval_resolved",
    "tool_result",
    "tool_progress",
    "tool_output",
    "tool_error",
    "compaction",
    "context_window",
    "prompt_cut",
    "error",
    "usage",
    "state",
    "settings",
    "notice",
    "resources_changed",
    "doctor_notice",
    "tool_call_probe",
    "prompt_progress",
    "files_changed",
    "plan",
    "sampling_requested",
    "elicitation_requested",
    "server_question_resolved",
    "local_model_starting",
    "local_model_crashed",
    "command_preview",
    "command_preview_settled",
    "subagent",
]

RunState = Literal["idle", "running", "waiting_approval", "interrupting"]

SECRET_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: a sentence for people and a stable code for scripts."""

    error: str
    code: str
    details: list[dict[str, Any]] | None = None


def _title(value: str) -> str:
    return refuse_nul(value, "A title")


Title = Annotated[str, AfterValidator(_title)]
"""A conversation's title: no NUL character (PostgreSQL's text cannot hold one)."""


class ConversationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: Title = Field(default=DEFAULT_TITLE, min_length=1, max_length=500)
    settings: ConversationSettings = Field(default_factory=ConversationSettings)


class ConversationUpdate(BaseModel):
    """A partial update: keys left out stay as they are, ``null`` clears a setting."""

    model_config = ConfigDict(extra="forbid")

    title: Title | None = Field(default=None, min_length=1, max_length=500)
    settings: ConversationSettings | None = None


class SandboxOut(BaseModel):
    """The sandbox that will actually apply to the conversation's commands on this server."""

    level: str = Field(description="The chosen level: workdir, read_only or off.")
    sandboxed: bool = Field(description="False when commands would run with the server "
                                        "account's full rights (level off, or no bubblewrap).")
    label: str = Field(description="What the window's header shows, e.g. 'Sandboxed' or "
                                   "'No sandbox: bubblewrap is not installed'.")
    detail: str = Field(description="What commands can reach, and how to install a sandbox "
                                    "when one is missing.")
    processes_capped: bool = Field(
        default=True, description="False when this machine cannot cap how many processes a "
                                  "command starts: a runaway command then runs until its "
                                  "time limit (the label and detail say so too).")


class ConversationOut(BaseModel):
    id: str
    title: str
    created_at: float
    updated_at: float
    settings: dict[str, Any]
    state: RunState
    confirm_tools: bool
    pending_approvals: int
    workdir: str
    sandbox: SandboxOut


class ConversationList(BaseModel):
    conversations: list[ConversationOut]


class DeleteResult(BaseModel):
    deleted: bool
    workdir_deleted: bool
    note: str | None = None


class MessageCreate(BaseModel):
    """A user message: text, or content parts with pictures (see ``message_content``)."""

    model_config = ConfigDict(extra="forbid")

    content: MessageContent

    @field_validator("content")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if isinstance(value, str) and not 1 <= len(value) <= 1_000_000:
            raise ValueError("the message must be 1 to 1,000,000 characters")
        return value


class MessageOut(BaseModel):
    id: str
    parent_id: str | None
    role: str
    message: dict[str, Any]
    status: str
    created_at: float


class MessageList(BaseModel):
    messages: list[MessageOut]


class RunRequest(BaseModel):
    """Start a turn; with ``message`` the text (or content parts) is sent first."""

    model_config = ConfigDict(extra="forbid")

    message: MessageContent | None = None

    @field_validator("message")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if isinstance(value, str) and not 1 <= len(value) <= 1_000_000:
            raise ValueError("the message must be 1 to 1,000,000 characters")
        return value


class RunStatus(BaseModel):
    conversation_id: str
    state: RunState


class InterruptResult(BaseModel):
    interrupted: bool
    state: RunState


class ToolCallStopResult(BaseModel):
    """Whether a running command was asked to end (False: none such ran, or it cannot stop)."""

    stopped: bool


class ToolCallProbeOut(BaseModel):
    """What *Test this model* measured: right answers of ``cases`` per way of calling tools.

    ``constrained`` is null when the server refused constrained decoding; ``mode`` is
    the tool-call mode the conversation's model now gets, and why.
    """

    cases: int
    native: int
    text: int
    constrained: int | None
    template_ignores_tools: bool | None
    error: str | None
    summary: str
    mode: str


class ConfirmationMode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool


class FileChangeOut(BaseModel):
    path: str = Field(description="The file the call names, relative to the working folder.")
    kind: Literal["edit", "new", "delete", "binary", "over_cap"] | None = Field(
        description="What the change does; null when the call would fail (see problem).")
    counts: str | None = Field(description="Lines added and removed, as '+12 −12'.")
    summary: str | None = Field(description="The change in one sentence.")
    problem: str | None = Field(
        description="Why the call would fail as it stands (for example an edit_file whose "
                    "old_string is not in the file), in the tool's own words.")
    text: str = Field(description="The change as a unified diff (or the sentence), as text.")


class ApprovalOut(BaseModel):
    tool_use_id: str
    tool_name: str
    input: dict[str, Any]
    read_only: bool
    source: str | None
    description: str
    requested_at: float
    unsandboxed: bool = Field(
        default=False,
        description="True when the call would run with no OS sandbox: it can do anything the "
                    "server's account can. Such calls are always asked, even without "
                    "confirmation mode.")
    agent: str | None = Field(
        default=None, description="The subagent whose call this is (None: the conversation's "
                                  "own agent).")
    diff: FileChangeOut | None = Field(
        default=None,
        description="For write_file and edit_file: the change the call would make, against "
                    "the file on disk when the approval was asked.")
    can_preview: bool = Field(
        default=False,
        description="For bash: approve with preview=true to run it on an overlay first; its "
                    "changes then wait for POST .../previews/{id}/apply or /discard.")


class ApprovalList(BaseModel):
    approvals: list[ApprovalOut]


class ApproveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: dict[str, Any] | None = Field(
        default=None, description="Edited tool input to run instead of the model's."
    )
    preview: bool = Field(
        default=False,
        description="Run the command on an overlay first (only where the approval says "
                    "can_preview): a command_preview event brings what it would change.")


class RejectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="The user rejected this tool call.", min_length=1,
                        max_length=10_000)


class ApprovalDecision(BaseModel):
    tool_use_id: str
    decision: Literal["approved", "rejected"]


class EventOut(BaseModel):
    """One event; the same shape in pages, on the SSE stream and in callback POSTs."""

    id: int
    conversation_id: str
    type: EventType
    data: dict[str, Any]
    created_at: float


class EventPage(BaseModel):
    events: list[EventOut]
    next_after: int = Field(description="Pass as `after` to read the next page.")
    has_more: bool


class CallbackCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=2000)
    event_types: list[EventType] | None = Field(
        default=None, description="Only these event types are posted; null means all."
    )


class CallbackOut(BaseModel):
    id: str
    url: str
    event_types: list[EventType] | None
    delivered: int
    failed: int
    pending: int
    last_error: str | None


class CallbackList(BaseModel):
    callbacks: list[CallbackOut]


class FileEntry(BaseModel):
    path: str
    name: str
    is_dir: bool
    size: int
    modified: float


class FileList(BaseModel):
    path: str
    entries: list[FileEntry]


class FileWritten(BaseModel):
    path: str
    size: int


class CommandRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, max_length=100_000)
    timeout: float = Field(default=60.0, gt=0, le=600)
    preview: bool = Field(
        default=False,
        description="Run it on an overlay of the working folder, which stays untouched: the "
                    "answer's 'preview' says what it would change; apply or discard it with "
                    "POST .../previews/{id}/apply or /discard.")


class CommandResult(BaseModel):
    exit_code: int | None = Field(description="None when the command was killed on timeout.")
    stdout: str
    stderr: str
    duration: float
    timed_out: bool
    truncated: bool
    sandboxed: bool = Field(
        default=True, description="False only when the conversation's sandbox setting is 'off'.")
    limit: str | None = Field(
        default=None, description="The limit the command ran into (memory, processes, file "
                                  "size, /tmp), in a sentence; None when none.")
    turn: str | None = Field(
        default=None, description="The command's turn in the folder's checkpoints: "
                                  "POST .../undo with it puts back what it changed.")
    preview: PreviewOut | None = Field(
        default=None, description="With preview: what the command would change (the folder "
                                  "is untouched until it is applied).")


class SecretSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: str = Field(min_length=1, max_length=100_000)


class SecretNames(BaseModel):
    names: list[str]


class SecretStored(BaseModel):
    name: str
    persisted: bool = Field(
        description="True if it persists (the OS keyring, or encrypted in the database "
                    "with --database); false if held for this session only."
    )


class Alive(BaseModel):
    """``GET /alive``; ``service`` lets model-server discovery recognise this app's own server."""

    status: Literal["ok"]
    service: Literal["desktop-agent"] = "desktop-agent"


class Ready(BaseModel):
    """``GET /ready``: whether this replica can serve requests (its database answers)."""

    status: Literal["ready", "starting", "unavailable"]
    database: Literal["ok", "unavailable", "error"] | None = Field(
        description="None while the server is still starting (not asked yet).")
    error: str | None = None

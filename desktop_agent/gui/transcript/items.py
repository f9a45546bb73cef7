"""What the transcript shows, as plain data, separate from the widgets.

Why: a conversation can hold thousands of messages but only the ones near the
viewport have widgets. Each item keeps everything needed to (re)build its
widget at any time: when it scrolls into range, when the palette changes, or
while it is still streaming. Streamed pieces are appended in O(1) and kept in
joined chunks; a widget remembers how many characters it has shown, so it only
ever reads new text.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.session import SubagentReported

#: Characters of live output an item keeps (the card shows the newest lines of them).
LIVE_TAIL_CHARS = 16_000


@dataclass
class UserItem:
    """A message the person sent."""

    key: str
    text: str
    branch: tuple[int, int] | None = None  # (position, alternatives) when edited
    branch_known: bool = False  # whether ``branch`` was looked up
    pictures: list[str] = field(default_factory=list)  # data: URIs sent with the text
    message_id: str | None = None  # the store's id: where reading back older pages starts


@dataclass
class ErrorItem:
    """An error in words, optionally with a Retry action."""

    key: str
    text: str
    retry: bool = True


#: Characters of streamed pieces joined into one string while an answer streams.
TEXT_CHUNK_CHARS = 2_048


@dataclass
class TextRun:
    """Consecutive answer (``kind="text"``) or reasoning (``"thinking"``) text.

    Streamed pieces are a few characters each; kept one ``str`` per piece in a
    list, an answer cost about ten times its text in memory for as long as the
    tab lived. Pieces are joined into chunks of about :data:`TEXT_CHUNK_CHARS`
    as they come (appending stays O(1) per piece) and into one string once the
    answer is complete (:meth:`complete`). Readers ask for the text after the
    characters they have already shown (:meth:`since`), so joining moves nothing
    they have read.
    """

    kind: str
    chunks: list[str] = field(default_factory=list)
    length: int = field(init=False, default=0)
    _pending: list[str] = field(init=False, default_factory=list, repr=False)
    _pending_chars: int = field(init=False, default=0, repr=False)

    def __post_init__(self) -> None:
        self.length = sum(len(chunk) for chunk in self.chunks)

    def append(self, piece: str) -> None:
        """Add one streamed piece."""
        self._pending.append(piece)
        self._pending_chars += len(piece)
        self.length += len(piece)
        if self._pending_chars >= TEXT_CHUNK_CHARS:
            self._join_pending()

    def since(self, offset: int) -> str:
        """The text after its first ``offset`` characters (what a reader has not shown)."""
        wanted = self.length - offset
        if wanted <= 0:
            return ""
        newest: list[str] = []
        got = 0
        for piece in reversed(self._pending):
            newest.append(piece)
            got += len(piece)
            if got >= wanted:
                break
        else:
            for chunk in reversed(self.chunks):
                newest.append(chunk)
                got += len(chunk)
                if got >= wanted:
                    break
        newest.reverse()
        joined = "".join(newest)
        return joined[len(joined) - wanted:]

    def text(self) -> str:
        """All the text."""
        self.complete()
        return self.chunks[0] if self.chunks else ""

    def complete(self) -> None:
        """Keep the text as one string (the answer ended, or the whole text was asked for)."""
        self._join_pending()
        if len(self.chunks) > 1:
            self.chunks[:] = ["".join(self.chunks)]

    def _join_pending(self) -> None:
        if self._pending:
            self.chunks.append("".join(self._pending))
            self._pending.clear()
            self._pending_chars = 0


@dataclass
class LiveOutput:
    """What a running command printed, as reported: a bounded tail and its figures.

    ``received`` counts the pieces ever appended, so a card that has shown the
    first ``n`` knows which are new even after old ones left the tail.
    """

    pieces: deque[str] = field(default_factory=deque)
    chars: int = 0
    received: int = 0
    lines: int = 0
    elapsed: float = 0.0
    stoppable: bool = False
    stop_asked: bool = False

    def append(self, text: str, lines: int, elapsed: float, stoppable: bool) -> None:
        """Add one report (its text may be empty: the figures still move)."""
        self.lines, self.elapsed = lines, elapsed
        self.stoppable = self.stoppable or stoppable
        if not text:
            return
        self.pieces.append(text)
        self.received += 1
        self.chars += len(text)
        while self.chars > LIVE_TAIL_CHARS and len(self.pieces) > 1:
            self.chars -= len(self.pieces.popleft())

    def since(self, seen: int) -> list[str] | None:
        """The pieces after the first ``seen``; None when some already left the tail."""
        new = self.received - seen
        if new > len(self.pieces):
            return None
        return list(self.pieces)[len(self.pieces) - new:] if new else []


#: Steps a subagent card keeps (its newest; the answer itself is the call's result).
SUBAGENT_STEPS_KEPT = 200


@dataclass
class SubagentRun:
    """A subagent run under a delegation call: what it wrote and called, and its figures.

    Built from the session's ``SubagentReported`` steps as they come, or from the
    record kept with the delegation's stored result. ``steps`` hold ``("text",
    piece)``, ``("call", "name(arguments)")`` and ``("result", call id, outcome)``
    lines in order; ``revision`` counts changes, so the card redraws only on news.
    """

    agent: str
    agent_id: str = ""
    model: str | None = None
    steps: list[list[str]] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)  # call id -> its step's index
    requests: int = 0
    tokens: int | None = None
    seconds: float = 0.0
    error: str | None = None
    finished: bool = False
    revision: int = 0

    def apply(self, event: SubagentReported) -> None:
        """One ``SubagentReported`` step."""
        step = event.step
        if step == "started":
            self.model = event.model
        elif step == "text":
            if self.steps and self.steps[-1][0] == "text":
                self.steps[-1][1] += event.text
            else:
                self._add(["text", event.text])
        elif step == "tool_call":
            self.calls[str(event.call_id)] = len(self.steps)
            self._add(["call", _call_line(event.name, event.input), "running…"])
        elif step in ("tool_result", "tool_error"):
            index = self.calls.get(str(event.call_id))
            if index is not None and index < len(self.steps):
                self.steps[index][2] = "failed" if event.is_error else "done"
        elif step == "finished":
            self.model = event.model or self.model
            self.requests, self.tokens = event.requests, event.tokens
            self.seconds, self.error, self.finished = event.seconds, event.error, True
        self.revision += 1

    def _add(self, step: list[str]) -> None:
        self.steps.append(step)
        if len(self.steps) > SUBAGENT_STEPS_KEPT:
            del self.steps[0]
            self.calls = {k: v - 1 for k, v in self.calls.items() if v > 0}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SubagentRun:
        """The run as the store kept it with the delegation's result."""
        run = cls(str(record.get("agent") or "subagent"), str(record.get("agent_id") or ""),
                  record.get("model"), requests=int(record.get("requests") or 0),
                  tokens=record.get("tokens"), seconds=float(record.get("seconds") or 0.0),
                  error=record.get("error"), finished=True)
        for call in record.get("calls") or []:
            run.steps.append(["call", _call_line(call.get("name"), call.get("input")),
                              "failed" if call.get("is_error") else "done"])
        if record.get("text"):
            run.steps.append(["text", str(record["text"])])
        return run


def _call_line(name: Any, arguments: Any) -> str:
    shown = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    if len(shown) > 120:
        shown = shown[:117] + "…"
    return f"{name}({shown})"


@dataclass
class CommandPreviewState:
    """A command preview on its card: what it would change, and where the decision stands.

    Attributes:
        card: The session's ``PreviewCard`` (output, counts, diffs, tree).
        status: ``waiting`` (Apply / Discard offered), ``applying``, ``conflict``
            (files changed meanwhile: named, *Apply anyway* offered), ``applied``,
            ``discarded`` or ``failed`` (stopped part way).
        message: The verdict, or the conflict or failure in words.
        deadline: ``time.monotonic()`` at which it is discarded unasked (None: never).
    """

    card: Any
    status: str = "waiting"
    message: str | None = None
    deadline: float | None = None

    @property
    def deciding(self) -> bool:
        """Whether Apply and Discard are offered."""
        return self.status in ("waiting", "conflict")


@dataclass
class ToolCallPart:
    """A tool call and, once known, its result or error."""

    tool_use_id: str
    name: str
    arguments: Any
    source: str | None = None
    result: str | None = None
    is_error: bool = False
    status: str | None = None  # shown until a result arrives, e.g. "waiting for approval"
    approval: Any = None  # an ApprovalPrompt while the person is asked on the card
    outcome: str | None = None  # "denied" / "expired": what an error result means
    pictures: list[str] = field(default_factory=list)  # data: URIs the tool returned
    preview: Any = None  # (FileDiff | None, problem | None): what a file call would change
    change: Any = None  # FileDiff: what the call changed in its file (kept in the store)
    live: LiveOutput | None = None  # what a running command printed so far
    edited: bool = False  # it ran with input edited at approval (shown instead of the model's)
    stopped_line: str | None = None  # the loop guard's "Stopped: ..." that left it unrun
    settled: int = 0  # times its stored result was applied (a card shows the latest)
    command_preview: CommandPreviewState | None = None  # a command run on an overlay
    subagent: SubagentRun | None = None  # the run a delegation call started


@dataclass
class ToolErrorPart:
    """A tool problem not tied to a card shown here (e.g. an unusable call)."""

    text: str


@dataclass
class ReplyNotePart:
    """Something about the reply itself a person should know (the server cut its prompt)."""

    text: str


AssistantPart = TextRun | ToolCallPart | ToolErrorPart | ReplyNotePart


@dataclass
class AssistantItem:
    """One assistant turn: reasoning, text and tool calls in arrival order.

    ``revision`` counts changes other than appended pieces (a tool result
    arriving, the turn ending) so widgets know to look again.
    """

    key: str
    parts: list[AssistantPart] = field(default_factory=list)
    open: bool = True
    interrupted: bool = False
    revision: int = 0
    branch: tuple[int, int] | None = None  # (position, alternatives) when regenerated
    branch_known: bool = False  # whether ``branch`` was looked up

    def append(self, kind: str, delta: str) -> None:
        """Add a text or thinking piece, starting a new run if the kind changes."""
        last = self.parts[-1] if self.parts else None
        if not (isinstance(last, TextRun) and last.kind == kind):
            last = TextRun(kind)
            self.parts.append(last)
        last.append(delta)

    def close(self, *, interrupted: bool) -> None:
        """The turn ended: its text runs are kept as one string each from now on."""
        self.open = False
        self.interrupted = interrupted
        self.revision += 1
        for part in self.parts:
            if isinstance(part, TextRun):
                part.complete()

    def find_tool_call(self, tool_use_id: str) -> ToolCallPart | None:
        """The call with this id in this turn, if any (searched from the end)."""
        for part in reversed(self.parts):
            if isinstance(part, ToolCallPart) and part.tool_use_id == tool_use_id:
                return part
        return None

    def markdown(self) -> str:
        """The answer text (no reasoning, no tool details), for Copy."""
        return "\n\n".join(
            part.text() for part in self.parts if isinstance(part, TextRun) and part.kind == "text"
        ).strip()


@dataclass
class CompactionItem:
    """Where the model's view was compacted: messages covered, and the summary (or None)."""

    key: str
    messages: int
    summary: str | None

    @property
    def title(self) -> str:
        """The marker's one line."""
        noun = "message" if self.messages == 1 else "messages"
        if self.summary:
            return f"{self.messages} earlier {noun} summarised"
        return f"{self.messages} earlier {noun} left out of the model's context"


TranscriptItem = UserItem | ErrorItem | AssistantItem | CompactionItem

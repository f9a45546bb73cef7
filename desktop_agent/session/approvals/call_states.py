"""What a tool call's card shows once the call is settled, read from its stored result.

Why one function: a card looked one way live (assembled from events as they
came) and another when the conversation was opened again (from the store):
denied, stopped and expired calls all came back as "failed", and the reason
sent to the model or the "Stopped: ..." line were gone. Both front-end paths
now read the same thing, the stored ``tool`` message and its metadata: the
window applies :func:`tool_call_state` to each tool result as it is stored
during a turn (``MessageStored``) and to each one it loads from the store, so
reopened looks exactly like live.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context.history_invariants import NOT_EXECUTED_INTERRUPT
from desktop_agent.session.branch.branch_reading import picture_urls, tool_result_text
from desktop_agent.session.files.file_changes import stored_file_change
from desktop_agent.store.message_text import content_text

if TYPE_CHECKING:
    from desktop_agent.workspace.diffs import FileDiff

#: Metadata key of a tool result the turn's loop guard or a limit left unrun: the stop's words.
STOPPED_KEY = "stopped"

#: Metadata key of a result whose command the person ended (Stop on its card).
STOPPED_BY_PERSON_KEY = "stopped_by_person"

#: Metadata key of a command's result: how much it printed and for how long (``lines``,
#: ``seconds``), as its card said while it ran ("20 lines · 10.2 s").
OUTPUT_FIGURES_KEY = "output_figures"

#: Approval words (the broker's and the core's) that mean the call did not run, and the card's word.
_REFUSALS = {"deny": "denied", "denied": "denied", "expired": "expired",
             "cancelled": "cancelled", "blocked": "blocked"}


@dataclass(frozen=True, slots=True)
class ToolCallState:
    """A settled call as its card shows it.

    Attributes:
        result: The text under "Output" (the error's sentence without "Error: ").
        is_error: The result is an error (the call failed or did not run).
        outcome: Why an error result is not a failure: ``denied``, ``expired``,
            ``cancelled``, ``blocked``, ``stopped`` (the turn was stopped) or
            ``not executed`` (the loop guard or a limit ended the turn); for a
            result, ``stopped`` when the person ended the command from its card;
            None for a plain result or a failure.
        pictures: ``data:`` URIs of the pictures the tool returned.
        change: The diff of what the call changed in its file, if it changed one.
        stopped: The loop guard's or limit's own words ("Stopped: ..."), shown
            once after the calls it left unrun.
        output_lines: Lines a command printed (with ``output_seconds``), when it
            reported its output as it ran; None otherwise.
        output_seconds: How long it ran, by its last report.
    """

    result: str
    is_error: bool
    outcome: str | None
    pictures: tuple[str, ...] = ()
    change: FileDiff | None = None
    stopped: str | None = None
    output_lines: int | None = None
    output_seconds: float | None = None

    @property
    def status(self) -> str:
        """The card's status word: ``done``, ``failed`` or the outcome."""
        return self.outcome or ("failed" if self.is_error else "done")


def tool_call_state(message: Mapping[str, Any], metadata: Mapping[str, Any]) -> ToolCallState:
    """The card state of a stored ``tool`` message (as written during the turn or read later)."""
    content = content_text(message.get("content"), image_placeholder="[image]")
    is_error = bool(metadata.get("is_error"))
    user_content = metadata.get("user_content")
    stopped = metadata.get(STOPPED_KEY)
    outcome: str | None = "stopped" if metadata.get(STOPPED_BY_PERSON_KEY) else None
    if is_error:
        approval = metadata.get("approval")
        decision = approval.get("decision") if isinstance(approval, Mapping) else None
        outcome = _REFUSALS.get(str(decision)) if decision else None
        if outcome is None and content == NOT_EXECUTED_INTERRUPT:
            outcome = "stopped"
        elif outcome is None and (stopped or content.startswith("Not executed:")):
            outcome = "not executed"
        if content.startswith("Error: "):
            content = content[len("Error: "):]  # the card says "Error" already
    lines, seconds = _output_figures(metadata.get(OUTPUT_FIGURES_KEY))
    return ToolCallState(
        tool_result_text(content, user_content if isinstance(user_content, str) else None),
        is_error, outcome, picture_urls(metadata.get("images")), stored_file_change(metadata),
        stopped if isinstance(stopped, str) and stopped else None, lines, seconds)


def _output_figures(stored: Any) -> tuple[int | None, float | None]:
    """(lines, seconds) kept with a command's result, or (None, None)."""
    if not isinstance(stored, Mapping):
        return None, None
    lines, seconds = stored.get("lines"), stored.get("seconds")
    if isinstance(lines, int) and isinstance(seconds, int | float):
        return lines, float(seconds)
    return None, None

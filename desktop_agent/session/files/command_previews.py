"""A conversation's command previews: run on an overlay, shown, then applied or discarded.

One part of :class:`~desktop_agent.session.conversation.ConversationSession`.
A command is previewed when the conversation's ``command_preview`` setting
is ``preview`` (*Preview changes first*), when a person chose *Preview* on
its approval, or when a REST ``/commands`` call asks for it. It runs in the
sandbox on an overlay (``core/tooling/builtin/command_preview.py``), and
what it would change waits here as a :class:`PreviewCard` (announced as
:class:`~desktop_agent.session.events.CommandPreviewReady`) until a person
or a script decides:

* :meth:`CommandPreviewDesk.apply` moves the changes into the folder
  (``workspace/preview_apply.py``: conflicts named first, nothing written
  unless forced; every write by descriptors, no link followed). A model's
  call is applied inside its turn, so the turn's checkpoint covers it and
  *Undo this turn* puts it back; a ``/commands`` preview is recorded as a
  command of its own (undoable like one).
* :meth:`CommandPreviewDesk.discard` drops them: the folder is as it was.

The model reads the command's output and the verdict (``applied``, or
``discarded: <reason>``). No decision within the approval timeout, a stopped
turn or a closed conversation discard it. Previews live in this process (a
REST preview is answered by the ``serve`` that ran it) and their layers in
``<data folder>/previews/<conversation id>/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from desktop_agent.session.errors import SessionError
from desktop_agent.session.events import (
    CommandPreviewReady,
    CommandPreviewSettled,
    SessionEvent,
)
from desktop_agent.session.files.preview_cards import PreviewCard, preview_card
from desktop_agent.session.settings.sandbox_settings import (
    previews_on,
    sandbox_level,
    sandbox_policy,
)

if TYPE_CHECKING:
    from desktop_agent.core.tooling.builtin.command_preview import (
        CommandPreview,
        CommandPreviews,
    )
    from desktop_agent.core.tooling.permissions import ToolPermissionContext
    from desktop_agent.session.files.file_checkpoints import TurnMark
    from desktop_agent.workspace.preview_apply import AppliedPreview

log = logging.getLogger("desktop_agent.session.previews")

#: Seconds a preview folder left by a crash is kept before it is swept away.
STALE_PREVIEW_SECONDS = 24 * 3600


class PreviewNotFoundError(SessionError):
    """No preview with that id waits here (decided already, or run by another process)."""


@dataclass(slots=True)
class _Waiting:
    """A preview waiting for a decision."""

    preview: CommandPreview
    card: PreviewCard
    verdict: asyncio.Future[str] | None  # a model's call waits on it; None for REST
    applying: bool = False
    idle: asyncio.Event = field(default_factory=asyncio.Event)  # set while no apply runs
    at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.idle.set()


Outcome = Literal["applied", "discarded"]

Recording = Callable[[], AbstractAsyncContextManager["TurnMark"]]
"""Records the folder around a change made outside a turn (a command's checkpoint)."""


class CommandPreviewDesk:
    """The previews of one conversation's commands waiting for a decision.

    Args:
        conversation_id: The conversation.
        settings: Returns its current settings.
        folder: Where its previews' layers go (``<data folder>/previews/<id>``).
        timeout: Seconds a model's previewed call waits for a decision (None: forever).
        record: Records the folder around a REST command's apply (undoable).
        emit: Reports session events.
    """

    def __init__(self, conversation_id: str, settings: Callable[[], Mapping[str, Any]],
                 folder: Path, timeout: float | None, record: Recording,
                 emit: Callable[[SessionEvent], None]) -> None:
        self.conversation_id = conversation_id
        self._settings = settings
        self.folder = folder
        self.timeout = timeout
        self._record = record
        self._emit = emit
        self._waiting: dict[str, _Waiting] = {}
        self._wanted_calls: set[str] = set()
        self._swept = False
        self._probe: asyncio.Task[str | None] | None = None

    # -- what the bash tool is given -----------------------------------------------------
    def mode(self, settings: Mapping[str, Any]) -> CommandPreviews | None:
        """The bash tool's preview mode under ``settings`` (None: commands cannot be previewed).

        Given whenever the sandbox keeps the folder writable, so a person's
        *Preview* on one call works with the setting off; which calls preview
        is :meth:`wanted`'s answer at each call.
        """
        if sandbox_level(settings) != "workdir":
            return None
        from desktop_agent.core.tooling.builtin.command_preview import CommandPreviews

        self._start_probe()
        return CommandPreviews(self.folder, self.decide, self.wanted)

    def _start_probe(self) -> None:
        """Find out once, in the background, whether previews work here (a trial preview).

        The same worker first sweeps away preview folders a crash left behind.
        """
        if self._probe is None:
            from desktop_agent.core.tooling.builtin.overlay_mount import overlay_problem

            def probe() -> str | None:
                sweep_previews(self.folder, STALE_PREVIEW_SECONDS)
                return overlay_problem(self.folder)

            self._swept = True
            self._probe = asyncio.ensure_future(asyncio.to_thread(probe))

    async def previewable(self, tool_name: str, context: ToolPermissionContext) -> bool:
        """Whether a person may answer *Preview* to this call (the approval card's choice).

        A built-in ``bash`` call, in a conversation that does not preview every
        command already, where previews work (probed once, from the turn's start:
        the first question of the app's life may wait for the trial to end).
        """
        from desktop_agent.core.tooling.builtin import BUILTIN_SOURCE

        if tool_name != "bash" or context.source not in (None, BUILTIN_SOURCE):
            return False
        settings = self._settings()
        if previews_on(settings) or sandbox_level(settings) != "workdir":
            return False
        self._start_probe()
        assert self._probe is not None
        try:
            return await asyncio.shield(self._probe) is None
        except Exception:  # noqa: BLE001 - a probe that failed means: no previews
            return False

    def wanted(self, tool_use_id: str | None) -> bool:
        """Whether this call runs as a preview (the setting, or a person's choice for it)."""
        if tool_use_id is not None and tool_use_id in self._wanted_calls:
            self._wanted_calls.discard(tool_use_id)
            return True
        return previews_on(self._settings())

    def want(self, tool_use_id: str) -> None:
        """Preview this call (the person chose *Preview* on its approval)."""
        self._wanted_calls.add(tool_use_id)

    # -- waiting for a decision ----------------------------------------------------------
    @property
    def pending(self) -> list[PreviewCard]:
        """The previews waiting for a decision, oldest first."""
        return [w.card for w in sorted(self._waiting.values(), key=lambda w: w.at)]

    async def decide(self, preview: CommandPreview) -> str:
        """A model's call: show the preview and wait for the person (the bash tool's ``decide``).

        Returns what the model reads: ``applied`` or ``discarded: <reason>``.
        """
        from desktop_agent.core.tooling.progress import running_call_id

        card = await asyncio.to_thread(preview_card, preview, running_call_id())
        verdict: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[preview.id] = _Waiting(preview, card, verdict)
        self._emit(CommandPreviewReady(card))
        try:
            return await asyncio.wait_for(asyncio.shield(verdict), self.timeout)
        except TimeoutError:
            await self._applied_or_not(preview.id)  # decided just in time: let it finish
            if verdict.done():
                return verdict.result()
            text = f"discarded: no decision came within {self.timeout:g} s"
            self._settle(preview.id, "discarded", text)
            return text
        except asyncio.CancelledError:
            # An apply in a worker thread reads the layers the tool removes next: wait.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._applied_or_not(preview.id))
            if not verdict.done():
                self._settle(preview.id, "discarded", "discarded: the turn was stopped")
            raise
        finally:
            self._waiting.pop(preview.id, None)

    async def _applied_or_not(self, preview_id: str) -> None:
        """Wait until no apply of this preview runs."""
        waiting = self._waiting.get(preview_id)
        if waiting is not None:
            await waiting.idle.wait()

    async def preview_command(self, command: str, workdir: Path, *, time_limit: float,
                              env_secrets: Mapping[str, str], output_cap: int) -> PreviewCard:
        """Run a REST command as a preview; it waits here until applied or discarded.

        Raises:
            PreviewUnavailableError: Previews cannot work here (said why).
            BuiltinToolError: The command cannot run (or the disk is too full).
        """
        from desktop_agent.core.tooling.builtin import Workdir
        from desktop_agent.core.tooling.builtin.command_preview import preview_command

        await self._sweep()
        policy = sandbox_policy(self._settings())
        preview = await preview_command(command, Workdir(workdir, hidden=policy.hidden),
                                        self.folder, time_limit=time_limit,
                                        env_secrets=env_secrets, output_cap=output_cap,
                                        sandbox=policy)
        try:
            card = await asyncio.to_thread(preview_card, preview, None)
        except BaseException:
            await asyncio.shield(asyncio.to_thread(preview.discard))
            raise
        if preview.incomplete is not None or preview.changes.empty:
            await asyncio.to_thread(preview.discard)  # nothing to decide
            return card
        self._waiting[preview.id] = _Waiting(preview, card, None)
        self._emit(CommandPreviewReady(card))
        return card

    # -- deciding ------------------------------------------------------------------------
    async def apply(self, preview_id: str, *, force: bool = False) -> AppliedPreview:
        """Move a preview's changes into the working folder.

        Raises:
            PreviewNotFoundError: No such preview waits here.
            PreviewConflictError: Files changed since it ran (named); nothing applied,
                the preview still waits (apply with ``force``, or discard).
            PreviewApplyError: It stopped part way (what was applied is said); the
                preview is closed.
        """
        from desktop_agent.workspace.preview_apply import PreviewApplyError, apply_preview

        waiting = self._claim(preview_id)
        try:
            if waiting.verdict is not None:  # inside the turn: its checkpoint covers it
                applied = await asyncio.to_thread(apply_preview, waiting.preview, force=force)
            else:
                async with self._record():
                    applied = await asyncio.to_thread(apply_preview, waiting.preview,
                                                      force=force)
        except PreviewApplyError as exc:
            await self._close(preview_id, "applied", f"partly applied: {exc}")
            raise
        finally:
            waiting.applying = False
            waiting.idle.set()
        overwritten = (f" (overwriting {len(applied.overwritten)} file"
                       f"{'' if len(applied.overwritten) == 1 else 's'} changed meanwhile)"
                       if applied.overwritten else "")
        await self._close(preview_id, "applied", f"applied{overwritten}")
        return applied

    async def discard(self, preview_id: str, reason: str = "") -> None:
        """Drop a preview's changes; ``reason`` is told to the model.

        Raises:
            PreviewNotFoundError: No such preview waits here.
        """
        waiting = self._claim(preview_id)
        reason = reason.strip() or "the person chose not to apply the changes"
        try:
            await self._close(preview_id, "discarded", f"discarded: {reason}")
        finally:
            waiting.applying = False
            waiting.idle.set()

    def withdraw(self, reason: str) -> None:
        """Discard every model call's preview (the turn is being stopped)."""
        for preview_id, waiting in list(self._waiting.items()):
            if waiting.verdict is not None and not waiting.applying:
                self._settle(preview_id, "discarded", f"discarded: {reason}")

    async def close(self) -> None:
        """Discard everything waiting (the conversation is closed)."""
        if self._probe is not None and not self._probe.done():
            self._probe.cancel()
        self.withdraw("the conversation was closed")
        for preview_id in list(self._waiting):
            with contextlib.suppress(PreviewNotFoundError):
                await self._close(preview_id, "discarded",
                                  "discarded: the conversation was closed")

    # -- the steps -----------------------------------------------------------------------
    def _claim(self, preview_id: str) -> _Waiting:
        waiting = self._waiting.get(preview_id)
        if waiting is None or waiting.applying or (waiting.verdict is not None
                                                   and waiting.verdict.done()):
            raise PreviewNotFoundError(
                "No such preview is waiting here: it was applied or discarded already, or "
                "another window or server ran it.")
        waiting.applying = True
        waiting.idle.clear()
        return waiting

    async def _close(self, preview_id: str, outcome: Outcome, text: str) -> None:
        """Settle a preview: tell the waiting call, or drop a REST preview's layers."""
        waiting = self._waiting.get(preview_id)
        if waiting is None:
            return
        self._settle(preview_id, outcome, text)
        if waiting.verdict is None:
            self._waiting.pop(preview_id, None)
            await asyncio.shield(asyncio.to_thread(waiting.preview.discard))

    def _settle(self, preview_id: str, outcome: Outcome, text: str) -> None:
        waiting = self._waiting.get(preview_id)
        card = waiting.card if waiting is not None else None
        if waiting is not None and waiting.verdict is not None and not waiting.verdict.done():
            waiting.verdict.set_result(text)
        self._emit(CommandPreviewSettled(preview_id, card.tool_use_id if card else None,
                                         outcome, text))

    async def _sweep(self) -> None:
        """Remove preview folders a crash left behind (once per session; old ones only)."""
        if self._swept:
            return
        self._swept = True
        await asyncio.to_thread(sweep_previews, self.folder, STALE_PREVIEW_SECONDS)


def sweep_previews(folder: Path, older_than: float) -> int:
    """Remove preview folders under ``folder`` not touched for ``older_than`` seconds."""
    from desktop_agent.core.tooling.builtin.overlay_mount import remove_tree

    removed = 0
    cutoff = time.time() - older_than
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            with contextlib.suppress(OSError):
                if entry.is_dir() and not entry.is_symlink() \
                        and entry.stat().st_mtime < cutoff:
                    remove_tree(entry)
                    removed += 1
    return removed


def delete_previews(conversation_id: str) -> None:
    """Remove a deleted conversation's preview layers (blocking)."""
    from desktop_agent.core.tooling.builtin.overlay_mount import remove_tree
    from desktop_agent.session.files.checkpoint_paths import previews_folder

    remove_tree(previews_folder(conversation_id))

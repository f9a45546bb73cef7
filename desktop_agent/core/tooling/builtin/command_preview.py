"""Previewing a command: run it on an overlay, read what it would change, let someone decide.

:func:`preview_command` runs ``bash -c command`` exactly as the sandbox runs
it, except that the working folder is the lower layer of an overlay whose
upper layer is a private folder (:mod:`.overlay_mount`). When it has ended
(and everything it started with it), the upper layer is read into a
:class:`.ChangeSet` (:mod:`.overlay_changes`): the working folder itself is
untouched.

The ``bash`` tool previews when given :class:`CommandPreviews`: it hands the
:class:`CommandPreview` to ``decide``, which shows it to a person (or a
script), applies it to the folder or discards it, and returns what the model
is told: ``applied``, or ``discarded: <reason>``. Applying is the
workspace's (``desktop_agent.workspace.preview_apply``: through the folder
writer, never following a link); the core only removes the layers once the
decision is made.

The upper layer lives in the data folder, so a command can fill that disk:
a watcher kills the command when the free space falls below
``min_free_mb`` and the preview is discarded unasked (its changes are
incomplete). The sandbox's file-size limit holds in the upper layer as
anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from desktop_agent.core.tooling.builtin.change_set import ChangeSet
from desktop_agent.core.tooling.builtin.overlay_changes import read_changes
from desktop_agent.core.tooling.builtin.overlay_mount import (
    MOUNT_FAILED,
    MOUNT_FAILED_MARK,
    PreviewLayers,
    overlay_launch,
    overlay_problem,
)
from desktop_agent.core.tooling.builtin.sandbox import SandboxPolicy
from desktop_agent.core.tooling.builtin.shell_tool import (
    DEFAULT_TIMEOUT,
    OUTPUT_CAP,
    Abort,
    CommandResult,
    open_pinned,
    run_launched,
)
from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir

log = logging.getLogger("desktop_agent.tools.preview")

#: Free space (MiB) the data folder's disk keeps while a preview runs; below it the command dies.
DEFAULT_MIN_FREE_MB = 256
#: Seconds between two looks at the data folder's free space while a preview runs.
DISK_CHECK_SECONDS = 0.2


class PreviewUnavailableError(BuiltinToolError):
    """Previews cannot work here (the sentence says why); the command runs as without them."""


@dataclass(slots=True)
class CommandPreview:
    """A command that ran on an overlay, and what it would change.

    Attributes:
        layers: Its folder (the upper layer holds the changes).
        command: The command line.
        workdir: The working folder it previewed.
        result: Its exit status and output, as without a preview.
        changes: What it would change in the folder.
        incomplete: Why its changes cannot be applied (it was stopped part way
            because the data folder's disk filled up); None when they can.
        secrets: The secrets the command was given (``NAME: value``), so what is
            shown of its changes (diffs, link texts, names) can be blanked out as
            its output was. Kept in memory only.
    """

    layers: PreviewLayers
    command: str
    workdir: Path
    result: CommandResult
    changes: ChangeSet
    incomplete: str | None = None
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def id(self) -> str:
        """The preview's id."""
        return self.layers.id

    def discard(self) -> None:
        """Drop the changes: remove the layers (blocking). The folder was never touched."""
        self.layers.remove()

    def summary(self) -> str:
        """``changes 3 files, deletes 1``."""
        return self.changes.counts().sentence()

    def to_text(self, verdict: str) -> str:
        """The result the model reads: the command's output, what it would change, the verdict."""
        lines = [self.result.to_text(),
                 f"preview: the command ran on a copy of the working folder; it "
                 f"{self.summary()}"]
        lines.extend(f"preview note: {note}" for note in self.changes.notes[:5])
        lines.append(f"preview outcome: {verdict}")
        return "\n".join(lines)


Decider = Callable[[CommandPreview], Awaitable[str]]
"""Shows a preview, applies or discards it, and returns what the model is told."""


def _always(_call: str | None) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class CommandPreviews:
    """The ``bash`` tool's preview mode.

    Attributes:
        folder: Where each preview's layers are made (the app: its data folder's
            ``previews/<conversation>``; a script: any folder on a disk with room).
        decide: Applies or discards a preview and returns the model's words
            (``applied``, ``discarded: <reason>``).
        wanted: Whether the call with this id is previewed (a per-call choice);
            by default every call is.
        min_free_mb: Free space the folder's disk keeps while a command runs.
    """

    folder: Path
    decide: Decider
    wanted: Callable[[str | None], bool] = field(default=_always)
    min_free_mb: int = DEFAULT_MIN_FREE_MB


def preview_problem(policy: SandboxPolicy, folder: Path) -> str | None:
    """Why commands under ``policy`` cannot be previewed in ``folder`` (None: they can).

    Blocking (the first call for a folder runs a trial preview).
    """
    if policy.level == "off":
        return "previews run inside the command sandbox, and this conversation's is off"
    if policy.level == "read_only":
        return "the sandbox keeps the working folder read-only, so a command changes nothing"
    return overlay_problem(folder)


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged program may still write on ``folder``'s disk."""
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize


async def preview_command(command: str, cwd: Workdir, folder: Path, *,
                          time_limit: float = DEFAULT_TIMEOUT,
                          env_secrets: Mapping[str, str] | None = None,
                          output_cap: int = OUTPUT_CAP, sandbox: SandboxPolicy | None = None,
                          min_free_mb: int = DEFAULT_MIN_FREE_MB) -> CommandPreview:
    """Run ``bash -c command`` on an overlay of ``cwd`` and read what it would change.

    The caller owns the returned preview: it must :meth:`~CommandPreview.discard`
    it (after applying, or not).

    Raises:
        PreviewUnavailableError: Previews cannot work here (said why).
        BuiltinToolError: The command cannot be started, or the disk is too full
            to start a preview.
        asyncio.CancelledError: The turn was interrupted (the command is killed
            and the layers removed first).
    """
    policy = sandbox or SandboxPolicy()
    reserve = min_free_mb << 20
    # One hand-over to a thread for the three checks: each costs a wake-up on a busy loop.
    layers = await asyncio.to_thread(_prepare, policy, folder, reserve)
    try:
        abort = Abort()
        watcher = asyncio.ensure_future(_watch_disk(folder, reserve, abort))
        try:
            result = await run_launched(
                command, cwd,
                lambda argv, fd: overlay_launch(policy, cwd.root, argv, layers, fd),
                time_limit=time_limit, env_secrets=env_secrets, output_cap=output_cap,
                abort=abort)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        if result.exit_code == MOUNT_FAILED and MOUNT_FAILED_MARK in result.stderr:
            raise BuiltinToolError("the preview's overlay could not be mounted, so the command "
                                   f"was not run: {_without_mark(result.stderr)}")
        incomplete = abort.reason or None
        if incomplete is None and "No space left on device" in result.stderr \
                and await asyncio.to_thread(free_bytes, folder) < reserve:
            incomplete = _disk_full(folder, min_free_mb)
        changes = await asyncio.to_thread(_read, cwd, layers)
    except BaseException:
        await asyncio.shield(asyncio.to_thread(layers.remove))
        raise
    return CommandPreview(layers, command, cwd.root, result, changes, incomplete,
                          dict(env_secrets or {}))


def _prepare(policy: SandboxPolicy, folder: Path, reserve: int) -> PreviewLayers:
    """Check that previews work and the disk has room, then make the layers (blocking)."""
    problem = preview_problem(policy, folder)
    if problem is not None:
        raise PreviewUnavailableError(problem)
    free = free_bytes(folder)
    if free < reserve:
        raise BuiltinToolError(f"the data folder's disk has {free >> 20} MiB free; a preview "
                               f"needs at least {reserve >> 20} MiB, so the command was not run")
    return PreviewLayers.make(folder)


def _read(cwd: Workdir, layers: PreviewLayers) -> ChangeSet:
    fd = open_pinned(cwd)
    try:
        return read_changes(str(layers.upper), fd)
    finally:
        os.close(fd)


def _disk_full(folder: Path, min_free_mb: int) -> str:
    return (f"the data folder's disk ({folder}) filled up: fewer than {min_free_mb} MiB were "
            "left, so the preview's changes are incomplete")


def _without_mark(stderr: str) -> str:
    return "; ".join(line for line in stderr.strip().splitlines()
                     if MOUNT_FAILED_MARK not in line)[:300] or "no reason given"


async def _watch_disk(folder: Path, reserve: int, abort: Abort) -> None:
    """Abort the command once the disk holding the upper layer has less than ``reserve`` free."""
    min_free_mb = reserve >> 20
    while not abort.is_set():
        await asyncio.sleep(DISK_CHECK_SECONDS)
        try:
            free = free_bytes(folder)  # one statfs: cheap enough for the loop
        except OSError:
            continue
        if free < reserve:
            log.warning("a preview filled the data folder's disk (%d MiB free); stopping it",
                        free >> 20)
            abort.abort(_disk_full(folder, min_free_mb))

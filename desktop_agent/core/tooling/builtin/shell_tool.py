"""One shell command in the workdir, sandboxed, bounded in time and output (``bash``'s engine).

The command runs inside the conversation's OS sandbox (see :mod:`.sandbox`)
and in its own session (process group), so that a timeout or an interrupted
turn kills everything it started, not just the shell: killing the sandbox's
outer process takes its whole PID namespace with it. Output is read as it
comes and only the first bytes of each stream are kept: a command that prints
gigabytes costs the app a fixed amount of memory. The environment is built,
never inherited: the conversation's secrets reach the command as environment
variables (and nothing of the app's own environment does), and they are
blanked out of whatever it prints, so they never land in the transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.secret_forms import longest_form, redact_text, secret_spans
from desktop_agent.core.tooling.builtin.live_output import LiveOutput
from desktop_agent.core.tooling.builtin.sandbox import (
    Launch,
    SandboxPolicy,
    command_environment,
    launch,
)
from desktop_agent.core.tooling.builtin.workdir import BuiltinToolError, Workdir
from desktop_agent.core.tooling.progress import progress_reporter, stop_requested

log = logging.getLogger("desktop_agent.tools.shell")

#: Seconds a command may run when the model gives no timeout.
DEFAULT_TIMEOUT = 60.0
#: Longest timeout the model may ask for.
MAX_TIMEOUT = 600.0
#: Bytes kept from each of stdout and stderr.
OUTPUT_CAP = 30_000
#: Seconds between SIGTERM and SIGKILL for the process group.
KILL_GRACE = 2.0
#: Seconds to wait for the pipes to close once the group is dead.
DRAIN_TIMEOUT = 2.0
_CHUNK = 65_536


class Abort(asyncio.Event):
    """An event a watcher sets to kill a running command, with the reason it gives."""

    reason: str = ""

    def abort(self, reason: str) -> None:
        """Kill the command for ``reason`` (the first reason given stands)."""
        if not self.is_set():
            self.reason = reason
            self.set()


@dataclass
class _Capture:
    """The first bytes of one output stream, and how many bytes were dropped."""

    limit: int
    data: bytearray
    total: int = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]


async def _pump(stream: asyncio.StreamReader | None, capture: _Capture,
                live: LiveOutput | None = None) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_CHUNK):
        capture.feed(chunk)
        if live is not None:
            live.feed(chunk)


def redact_secrets(text: str, secrets: Mapping[str, str]) -> str:
    """Replace every secret value in ``text`` with a marker naming the variable.

    Also its other forms (``echo "$TOKEN" | base64`` printed it whole), and a
    value split by terminal escapes (:mod:`desktop_agent.core.secret_forms`).
    """
    marks: dict[str, str] = {}
    for name, value in sorted(secrets.items(), key=lambda item: -len(item[1])):
        if value and len(value) >= 3:
            marks.setdefault(value, f"[secret {name} redacted]")
    return redact_text(text, marks)


def open_pinned(cwd: Workdir) -> int:
    """A descriptor of the workdir, refused unless it is still the folder pinned at the start.

    The sandbox mounts this descriptor, so a folder swapped for a link after
    the check cannot redirect the command.
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(cwd.root, flags)
    except OSError as exc:
        raise BuiltinToolError(f"the working directory {str(cwd.root)!r} cannot be opened: "
                               f"{exc.strerror or exc}") from exc
    try:
        cwd.check_pinned(os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kill_group(process: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform != "win32":
            os.killpg(process.pid, sig)
        else:  # pragma: no cover - no process groups to signal on Windows
            process.kill()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, then SIGKILL it if it lingers."""
    _kill_group(process, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), KILL_GRACE)
    except TimeoutError:
        _kill_group(process, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), KILL_GRACE)
    if sys.platform != "win32":
        # Children that ignored SIGTERM may outlive the shell; finish them.
        _kill_group(process, signal.SIGKILL)


@dataclass
class CommandResult:
    """What one command did, before it is turned into text for the model."""

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_dropped: int
    stderr_dropped: int
    timed_out: bool
    timeout: float
    limit: str | None = None
    stopped_after: float | None = None
    aborted: str | None = None

    def to_text(self) -> str:
        """The result as the model reads it (and the card shows)."""
        parts: list[str] = []
        if self.aborted is not None:
            parts.append(f"stopped: {self.aborted}; the command and everything it started "
                         "were killed")
        elif self.stopped_after is not None:
            parts.append(f"stopped by the person after {self.stopped_after:.1f} s; the command "
                         "and everything it started were killed")
        elif self.timed_out:
            parts.append(f"timed out after {self.timeout:g} s; the command and everything it "
                         "started were killed")
        else:
            parts.append(f"exit code: {self.exit_code}")
        if self.limit:
            parts.append(f"limit reached: {self.limit}")
        for label, text, dropped in (("stdout", self.stdout, self.stdout_dropped),
                                     ("stderr", self.stderr, self.stderr_dropped)):
            if not text and not dropped:
                continue
            parts.append(f"{label}:\n{text}")
            if dropped:
                parts.append(f"[{label} truncated: {dropped} more bytes not shown]")
        return "\n".join(parts)


async def run_command(
    command: str,
    cwd: Workdir,
    *,
    time_limit: float = DEFAULT_TIMEOUT,
    env_secrets: Mapping[str, str] | None = None,
    output_cap: int = OUTPUT_CAP,
    sandbox: SandboxPolicy | None = None,
) -> CommandResult:
    """Run ``bash -c command`` in the workdir, sandboxed, and collect its bounded output.

    Args:
        command: The command line.
        cwd: The working folder.
        time_limit: Seconds before the command and everything it started are killed.
        env_secrets: The conversation's secrets, as environment variables.
        output_cap: Bytes kept of each of stdout and stderr.
        sandbox: Where the command may reach (default: :class:`SandboxPolicy()`:
            the working folder read-write, no network).

    Inside a tool call, the output is also reported as it comes (see
    :mod:`.live_output`) and the person may stop just this command (its
    result then says so).

    Raises:
        BuiltinToolError: bash is missing or the command cannot be started.
        asyncio.CancelledError: The turn was interrupted (the process group is
            killed before this propagates).
    """
    policy = sandbox or SandboxPolicy()
    return await run_launched(
        command, cwd, lambda argv, fd: launch(policy, cwd.root, argv, root_fd=fd),
        time_limit=time_limit, env_secrets=env_secrets, output_cap=output_cap)


PlanFor = Callable[[list[str], int], Launch]
"""Makes the launch of ``argv`` given the pinned working folder's descriptor."""


async def run_launched(command: str, cwd: Workdir, plan_for: PlanFor, *,
                       time_limit: float = DEFAULT_TIMEOUT,
                       env_secrets: Mapping[str, str] | None = None,
                       output_cap: int = OUTPUT_CAP,
                       abort: Abort | None = None) -> CommandResult:
    """:func:`run_command` with the launch made by ``plan_for`` (the sandbox, or a preview's).

    ``abort``: set by a watcher to kill the command early (its reason goes in the result).
    """
    if not command.strip():
        raise BuiltinToolError("the command is empty")
    if not 0 < time_limit <= MAX_TIMEOUT:
        raise BuiltinToolError(f"the time limit must be between 0 and {MAX_TIMEOUT:g} seconds")
    bash = shutil.which("bash")
    if bash is None:
        raise BuiltinToolError("bash is not installed or not on PATH")
    secrets = dict(env_secrets or {})
    env = command_environment(cwd.root, secrets)
    root_fd = open_pinned(cwd)
    try:
        plan = plan_for([bash, "-c", command], root_fd)
    except BaseException:
        os.close(root_fd)
        raise
    # Keep room to redact a secret (in any of its forms) that straddles the cap
    # before cutting at the cap.
    slack = 4 * longest_form(secrets.values())
    out = _Capture(output_cap + slack, bytearray())
    err = _Capture(output_cap + slack, bytearray())
    try:
        process = await asyncio.create_subprocess_exec(
            *plan.argv,
            cwd=str(cwd.root), env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=sys.platform != "win32",
            pass_fds=plan.pass_fds,
        )
    except OSError as exc:
        plan.cleanup()
        raise BuiltinToolError(f"could not start bash: {exc}") from exc
    finally:
        os.close(root_fd)  # bwrap holds its own copy until it has mounted the folder
    try:
        result = await _collect(process, out, err, time_limit, output_cap, secrets, abort)
        if plan.limits is not None:
            result.limit = plan.limits.explain(result.exit_code, result.stderr,
                                               pids_hit=plan.pids_hit())
            if result.limit is None and result.timed_out and not plan.processes_capped:
                result.limit = plan.limits.uncapped_timeout(time_limit)
        return result
    finally:
        plan.cleanup()


async def _collect(process: asyncio.subprocess.Process, out: _Capture, err: _Capture,
                   time_limit: float, output_cap: int, secrets: Mapping[str, str],
                   abort: Abort | None = None) -> CommandResult:
    """Wait for the command (killing its group on timeout, Stop or abort) and drain its pipes."""
    # Live output only inside a tool call (someone listens); a plain run_command has none.
    live = LiveOutput() if progress_reporter() is not None else None
    stop = stop_requested()
    pumps = asyncio.gather(_pump(process.stdout, out, live), _pump(process.stderr, err, live))
    exited = asyncio.ensure_future(process.wait())
    reporting = (asyncio.ensure_future(live.report_until_done(exited))
                 if live is not None else None)
    timed_out = False
    stopped_after: float | None = None
    try:
        ended = await _wait_exit_or_stop(exited, stop, time_limit, abort)
        if ended == "stop":
            stopped_after = live.elapsed() if live is not None else 0.0
            await _stop(process)
        elif ended == "abort":
            await _stop(process)
    except TimeoutError:
        timed_out = True
        await _stop(process)
    except asyncio.CancelledError:
        await asyncio.shield(_stop(process))
        pumps.cancel()
        raise
    finally:
        if reporting is not None:
            reporting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reporting
    try:
        # A background child that left the group may hold the pipes open.
        await asyncio.wait_for(asyncio.shield(pumps), DRAIN_TIMEOUT)
    except TimeoutError:
        pumps.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pumps
    if live is not None:
        live.flush()  # the last lines, so a live view ends where the command did
    return CommandResult(
        exit_code=process.returncode,
        stdout=_finish(out, output_cap, secrets),
        stderr=_finish(err, output_cap, secrets),
        stdout_dropped=max(0, out.total - output_cap),
        stderr_dropped=max(0, err.total - output_cap),
        timed_out=timed_out,
        timeout=time_limit,
        stopped_after=stopped_after,
        aborted=abort.reason if abort is not None and abort.is_set() else None,
    )


async def _wait_exit_or_stop(exited: asyncio.Future[Any], stop: asyncio.Event | None,
                             time_limit: float, abort: Abort | None = None) -> str:
    """Wait for the command to exit: ``exit``, or ``stop`` (the person), ``abort`` (a watcher).

    Raises:
        TimeoutError: None of them happened within ``time_limit``.
    """
    if stop is None and abort is None:
        await asyncio.wait_for(asyncio.shield(exited), time_limit)
        return "exit"
    waiters: dict[asyncio.Future[Any], str] = {exited: "exit"}
    if stop is not None:
        waiters[asyncio.ensure_future(stop.wait())] = "stop"
    if abort is not None:
        waiters[asyncio.ensure_future(abort.wait())] = "abort"
    try:
        done, _ = await asyncio.wait(set(waiters), timeout=time_limit,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            if waiter is not exited:
                waiter.cancel()
    if not done:
        raise TimeoutError
    if exited in done:
        return "exit"
    return next(waiters[w] for w in done)


def _finish(capture: _Capture, cap: int, secrets: Mapping[str, str]) -> str:
    """Cut a capture to ``cap`` bytes without ever cutting through a secret, then redact.

    The capture holds ``cap`` plus room for the longest form of a secret, so a
    secret that starts before the cut is complete in it and can be blanked out whole.
    """
    text = bytes(capture.data).decode("utf-8", errors="replace")
    cut = len(bytes(capture.data[:cap]).decode("utf-8", errors="replace"))
    if cut < len(text):
        for start, end, _kind, _value in secret_spans(text, secrets.values()):
            if start < cut < end:
                cut = end
    return redact_secrets(text[:cut], secrets)

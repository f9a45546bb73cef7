"""Hooks written as commands, configured the way Claude Code, Cline and goose configure them.

A tools config may hold, beside its MCP servers::

    "hooks": {
      "PreToolUse": [{"matcher": "bash|write_file",
                      "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}],
      "Stop":       [{"hooks": [{"type": "command", "command": "make lint"}]}]
    }

Each command gets the event's JSON payload (claude-agent-sdk's field names,
:meth:`~desktop_agent.core.tooling.hooks.PreToolUseEvent.payload`) on stdin,
and answers as Claude Code's hooks do:

* exit status **2** blocks (the tool call, the prompt, the stop) with the
  command's stderr as the reason the model or the person reads;
* exit status 0 with a JSON object on stdout may decide too: ``"decision":
  "block"`` or ``"continue": false`` (with ``reason``/``stopReason``),
  ``hookSpecificOutput.permissionDecision: "deny"``, or
  ``hookSpecificOutput.updatedInput`` (a PreToolUse rewrite). Output that is
  not a JSON object is ignored, with a log line;
* any other status, a command that does not finish within its ``timeout``
  (killed with everything it started), or one that cannot start, decides
  nothing and is logged: a broken hook must not stop the agent.

``matcher`` is a regular expression over the tool name (PreToolUse and
PostToolUse; ``""`` or ``"*"`` or none: every tool); other events ignore it.
The commands run the way the agent's ``bash`` does: through a
:data:`HookCommandRunner` the app builds with the conversation's sandbox,
working folder and secrets (:func:`sandboxed_runner`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop_agent.core.tooling.builtin.sandbox import (
    SandboxPolicy,
    command_environment,
    launch,
)
from desktop_agent.core.tooling.config import ToolConfigError
from desktop_agent.core.tooling.hooks import (
    CLAUDE_HOOK_NAMES,
    HOOK_EVENTS,
    HOOK_POST_TOOL_USE,
    HOOK_PRE_TOOL_USE,
    HookDecision,
    HookEvent,
    HookHandler,
)
from desktop_agent.core.tooling.redaction import redact_values

log = logging.getLogger("desktop_agent.hooks.commands")

#: Seconds a hook command may take when its entry names no ``timeout`` (Claude Code's 60).
DEFAULT_HOOK_TIMEOUT = 60.0
MAX_HOOK_TIMEOUT = 600.0
#: Bytes of a hook's stdout and stderr kept (the rest is dropped unread).
OUTPUT_CAP = 64 * 1024
_TOOL_EVENTS = (HOOK_PRE_TOOL_USE, HOOK_POST_TOOL_USE)
_CLAUDE_NAME = {ours: theirs for theirs, ours in CLAUDE_HOOK_NAMES.items()}


@dataclass(frozen=True, slots=True)
class CommandHook:
    """One configured hook command.

    Attributes:
        event: The event (our name, e.g. ``pre_tool_use``).
        command: The shell command (run with ``bash -c`` in the working folder).
        matcher: Tool names it applies to, as a regular expression (None: all).
        timeout: Seconds before it is killed.
    """

    event: str
    command: str
    matcher: str | None = None
    timeout: float = DEFAULT_HOOK_TIMEOUT

    @property
    def event_name(self) -> str:
        """The event as the config names it (claude-agent-sdk's ``PreToolUse``...)."""
        return _CLAUDE_NAME.get(self.event, self.event)

    def applies_to(self, tool_name: str | None) -> bool:
        """Whether the hook runs for a call of ``tool_name`` (always outside tool events)."""
        if self.event not in _TOOL_EVENTS or self.matcher in (None, "", "*"):
            return True
        return tool_name is not None and re.fullmatch(self.matcher or "", tool_name) is not None


@dataclass(frozen=True, slots=True)
class HookRun:
    """What one run of a hook command did."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


HookCommandRunner = Callable[[str, str, float], Awaitable[HookRun]]
"""Runs ``(command, stdin text, timeout)`` and reports how it ended (raises OSError if it cannot
start)."""


def parse_command_hooks(data: Any, where: str = "config") -> list[CommandHook]:
    """The ``hooks`` object of a config, checked; raise :class:`ToolConfigError` saying where.

    Event names are claude-agent-sdk's (``PreToolUse``) or ours (``pre_tool_use``).
    """
    if data is None:
        return []
    place = f"{where}: hooks"
    if not isinstance(data, Mapping):
        raise ToolConfigError(f"{place} must be an object of event names to lists of matchers")
    found: list[CommandHook] = []
    for name, groups in data.items():
        event = CLAUDE_HOOK_NAMES.get(name, name)
        if event not in HOOK_EVENTS:
            raise ToolConfigError(f"{place}: unknown event {name!r}; use one of "
                                  f"{', '.join(CLAUDE_HOOK_NAMES)}")
        if not isinstance(groups, list):
            raise ToolConfigError(f"{place}.{name} must be a list of {{\"matcher\", \"hooks\"}} "
                                  "objects")
        for index, group in enumerate(groups):
            found += _group(event, group, f"{place}.{name}[{index}]")
    return found


def _group(event: str, group: Any, place: str) -> list[CommandHook]:
    if not isinstance(group, Mapping):
        raise ToolConfigError(f"{place} must be an object with \"hooks\" (and a \"matcher\")")
    matcher = group.get("matcher")
    if matcher is not None:
        if not isinstance(matcher, str):
            raise ToolConfigError(f"{place}.matcher must be a string (a tool-name pattern)")
        if matcher not in ("", "*"):
            try:
                re.compile(matcher)
            except re.error as exc:
                raise ToolConfigError(f"{place}.matcher is not a valid pattern: {exc}") from None
    entries = group.get("hooks")
    if not isinstance(entries, list) or not entries:
        raise ToolConfigError(f"{place}.hooks must be a non-empty list of "
                              "{\"type\": \"command\", \"command\": ...} objects")
    hooks = []
    for index, entry in enumerate(entries):
        here = f"{place}.hooks[{index}]"
        if not isinstance(entry, Mapping) or entry.get("type", "command") != "command":
            raise ToolConfigError(f"{here} must be {{\"type\": \"command\", \"command\": ...}}")
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolConfigError(f"{here}.command must be a non-empty string")
        timeout = entry.get("timeout", DEFAULT_HOOK_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) \
                or not 0 < timeout <= MAX_HOOK_TIMEOUT:
            raise ToolConfigError(f"{here}.timeout must be seconds between 0 and "
                                  f"{MAX_HOOK_TIMEOUT:g}")
        hooks.append(CommandHook(event, command, matcher, float(timeout)))
    return hooks


def command_hook_handlers(hooks: Sequence[CommandHook],
                          runner: HookCommandRunner) -> dict[str, list[HookHandler]]:
    """Handlers (for ``AgentOptions.hooks``) that run ``hooks`` through ``runner``."""
    handlers: dict[str, list[HookHandler]] = {}
    for hook in hooks:
        handlers.setdefault(hook.event, []).append(_handler(hook, runner))
    return handlers


def _handler(hook: CommandHook, runner: HookCommandRunner) -> HookHandler:
    async def run(event: HookEvent) -> HookDecision | None:
        if not hook.applies_to(getattr(event, "tool_name", None)):
            return None
        payload = json.dumps(event.payload(), ensure_ascii=False, default=str)
        try:
            ran = await runner(hook.command, payload, hook.timeout)
        except OSError as exc:
            log.warning("%s hook %r could not start: %s", hook.event_name, hook.command, exc)
            return None
        return decision_of(hook, ran)

    run.__name__ = f"{hook.event}_command_hook"
    return run


def decision_of(hook: CommandHook, ran: HookRun) -> HookDecision | None:
    """What a finished hook command decided (None: nothing), as Claude Code reads it."""
    name = hook.event_name
    if ran.timed_out:
        log.warning("%s hook %r did not finish within %g s; it was stopped and decides "
                    "nothing", name, hook.command, hook.timeout)
        return None
    if ran.exit_code == 2:
        reason = ran.stderr.strip() or f"blocked by the {name} hook {hook.command!r}"
        return HookDecision(continue_=False, reason=reason)
    if ran.exit_code != 0:
        log.warning("%s hook %r exited with %s (not a decision): %s", name, hook.command,
                    ran.exit_code, ran.stderr.strip()[:300])
        return None
    out = ran.stdout.strip()
    if not out:
        return None
    try:
        answer = json.loads(out)
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        log.warning("%s hook %r printed something that is not a JSON object; ignored: %.200s",
                    name, hook.command, out)
        return None
    return _json_decision(answer)


def _json_decision(answer: Mapping[str, Any]) -> HookDecision | None:
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, Mapping) else {}
    reason = next((str(v) for v in (answer.get("reason"), answer.get("stopReason"),
                                    specific.get("permissionDecisionReason")) if v), None)
    if answer.get("continue") is False or answer.get("decision") == "block" \
            or specific.get("permissionDecision") == "deny":
        return HookDecision(continue_=False, reason=reason or "blocked by a hook")
    updated = specific.get("updatedInput")
    if isinstance(updated, dict):
        return HookDecision(modified_input=dict(updated), reason=reason)
    return None


def sandboxed_runner(policy: SandboxPolicy, workdir: Path,
                     env_secrets: Mapping[str, str] | None = None) -> HookCommandRunner:
    """Run hook commands as the agent's ``bash`` runs: in ``workdir``, under ``policy``.

    The command sees the conversation's secrets as environment variables (as
    its commands do) and ``CLAUDE_PROJECT_DIR`` (the working folder, for
    hooks written for Claude Code); what it prints loses those secrets before
    it becomes a reason anyone reads.
    """
    secrets = dict(env_secrets or {})

    async def run(command: str, stdin_text: str, timeout: float) -> HookRun:
        bash = shutil.which("bash")
        if bash is None:
            raise OSError("bash is not installed")
        env = command_environment(workdir, secrets)
        env["CLAUDE_PROJECT_DIR"] = str(workdir)
        plan = launch(policy, workdir, [bash, "-c", command])
        try:
            process = await asyncio.create_subprocess_exec(
                *plan.argv, cwd=str(workdir), env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=sys.platform != "win32", pass_fds=plan.pass_fds)
        except OSError:
            plan.cleanup()
            raise
        try:
            ran = await _finish(process, stdin_text, timeout)
        finally:
            plan.cleanup()
        values = tuple(secrets.values())
        return HookRun(ran.exit_code, redact_values(ran.stdout, values),
                       redact_values(ran.stderr, values), ran.timed_out)

    return run


async def _finish(process: asyncio.subprocess.Process, stdin_text: str,
                  timeout: float) -> HookRun:
    """Feed stdin, wait up to ``timeout`` and collect bounded output; kill the group on timeout."""
    talk = asyncio.ensure_future(_talk(process, stdin_text))
    try:
        out, err = await asyncio.wait_for(asyncio.shield(talk), timeout)
    except TimeoutError:
        _kill_group(process)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(talk, 5)
        return HookRun(None, "", "", timed_out=True)
    except asyncio.CancelledError:
        _kill_group(process)
        raise
    return HookRun(process.returncode, out.decode(errors="replace"),
                   err.decode(errors="replace"))


async def _talk(process: asyncio.subprocess.Process, stdin_text: str) -> tuple[bytes, bytes]:
    """Write the payload, read both pipes (the first :data:`OUTPUT_CAP` bytes kept), wait."""
    if process.stdin is not None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write(stdin_text.encode())
            await process.stdin.drain()
        process.stdin.close()
    out, err = await asyncio.gather(_drain(process.stdout), _drain(process.stderr))
    await process.wait()
    return out, err


async def _drain(stream: asyncio.StreamReader | None) -> bytes:
    kept = bytearray()
    if stream is None:
        return b""
    while chunk := await stream.read(65536):
        if len(kept) < OUTPUT_CAP:
            kept += chunk[:OUTPUT_CAP - len(kept)]
    return bytes(kept)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if sys.platform != "win32":
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - not on Linux CI
            process.kill()

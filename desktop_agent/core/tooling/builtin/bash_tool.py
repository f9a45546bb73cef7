"""The ``bash`` tool: one shell command in the sandbox, or previewed on an overlay first.

Without previews the command runs on the working folder
(:func:`.shell_tool.run_command`). With :class:`.CommandPreviews` (a
conversation's *Preview changes first*, or a person's *Preview* on one
call) it runs on an overlay (:func:`.command_preview.preview_command`); what
it would change goes to the previews' ``decide``, which applies or discards
it, and the model reads the output, what the command would change and the
verdict. Where previews cannot work (no overlay here) the command runs as it
would without them, and the result says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from desktop_agent.core.tooling.builtin.command_preview import (
    CommandPreview,
    CommandPreviews,
    Decider,
    PreviewUnavailableError,
    preview_command,
)
from desktop_agent.core.tooling.builtin.declare import builtin_tool
from desktop_agent.core.tooling.builtin.sandbox import SandboxPolicy
from desktop_agent.core.tooling.builtin.sandbox_warning import UNSANDBOXED_WARNING
from desktop_agent.core.tooling.builtin.shell_tool import (
    DEFAULT_TIMEOUT,
    DRAIN_TIMEOUT,
    KILL_GRACE,
    MAX_TIMEOUT,
    run_command,
)
from desktop_agent.core.tooling.builtin.workdir import Workdir
from desktop_agent.core.tooling.progress import running_call_id
from desktop_agent.core.tooling.tools import Tool

log = logging.getLogger("desktop_agent.tools.shell")

#: Extra seconds the tool's own timeout allows while a person looks at a preview.
DECISION_ALLOWANCE = 24 * 3600.0


async def settle_preview(preview: CommandPreview, decide: Decider) -> str:
    """Have ``decide`` apply or discard ``preview``, drop its layers, and return the model's text.

    A preview that changes nothing, or whose changes are incomplete (its disk
    filled up), is settled without asking.
    """
    try:
        if preview.incomplete is not None:
            verdict = f"discarded: {preview.incomplete}"
        elif preview.changes.empty:
            verdict = "nothing to apply"
        else:
            verdict = await decide(preview)
    finally:
        await asyncio.shield(asyncio.to_thread(preview.discard))
    return preview.to_text(verdict)


def shell_tool(workdir: Workdir, env_secrets: Mapping[str, str] | None = None,
               sandbox: SandboxPolicy | None = None,
               previews: CommandPreviews | None = None) -> Tool:
    """The ``bash`` tool bound to ``workdir``, the conversation's secrets and its sandbox.

    The tool is marked ``unsandboxed`` when no sandbox can hold it here (level
    ``off``, or no bubblewrap): approvers must then warn the person and never
    let a rule run it unasked. ``previews``: run the calls it wants on an
    overlay and let its ``decide`` apply or discard their changes.
    """
    secrets = dict(env_secrets or {})
    policy = sandbox or SandboxPolicy()
    names = ", ".join(sorted(secrets))
    note = f" Environment variables with secrets: {names}." if names else ""
    if policy.sandboxed:
        reach = "read-only" if policy.level == "read_only" else "read-write"
        note += (f" Sandboxed: working folder {reach}"
                 + ("." if policy.network else ", no network access."))
    if previews is not None:
        note += (" A command's changes to the folder may be shown to the person first; the "
                 "result says whether they were applied or discarded.")
    # A preview waits for a person after the command: its own limit is the command's,
    # so the tool's timeout leaves room for the decision (the broker's timeout decides).
    timeout = MAX_TIMEOUT + 2 * KILL_GRACE + DRAIN_TIMEOUT + 5
    if previews is not None:
        timeout += DECISION_ALLOWANCE

    @builtin_tool(timeout=timeout, brief="Run a bash command.",
                  params={"timeout_seconds": "max 600"})
    async def bash(command: str, timeout_seconds: float = DEFAULT_TIMEOUT) -> str:
        """Run a bash command in the working directory; returns exit code, stdout and stderr.

        Args:
            command: The command line, run with ``bash -c``.
            timeout_seconds: Seconds before the command and its children are killed (max 600).
        """
        if previews is not None and previews.wanted(running_call_id()):
            try:
                preview = await preview_command(
                    command, workdir, previews.folder, time_limit=timeout_seconds,
                    env_secrets=secrets, sandbox=policy, min_free_mb=previews.min_free_mb)
            except PreviewUnavailableError as exc:
                log.info("not previewing a command: %s", exc)
                result = await run_command(command, workdir, time_limit=timeout_seconds,
                                           env_secrets=secrets, sandbox=policy)
                return (f"{result.to_text()}\npreview: not previewed ({exc}); the command ran "
                        "on the working folder")
            return await settle_preview(preview, previews.decide)
        result = await run_command(command, workdir, time_limit=timeout_seconds,
                                   env_secrets=secrets, sandbox=policy)
        return result.to_text()

    bash.description += note
    bash.unsandboxed = not policy.sandboxed
    if bash.unsandboxed:
        log.info("bash in %s: %s", workdir.root, UNSANDBOXED_WARNING)
    return bash

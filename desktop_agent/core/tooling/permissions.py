"""Who may run which tool: rules first, then the approval callback.

Decision order for every tool call (the same in the window, the REST server
and scripts):

1. Deny rules and ``disallowed_tools``: the call is refused.
2. Ask rules: the approval callback decides.
3. Allow rules and ``allowed_tools``: the call runs.
4. Anything else goes to ``can_use_tool`` when one is set; with no callback the
   tool runs (the SDK's plain auto mode).

The agent's *permission mode* (claude-agent-sdk's four, :data:`PermissionMode`)
then adjusts what the rules left, in :func:`apply_permission_mode`, the one
place every path (window, REST, scripts, subagents) goes through: deny rules
win in every mode; ``acceptEdits`` lets file edits in the working folder run
unasked; ``plan`` refuses every tool that is not read-only; ``bypassPermissions``
lets everything run, except a tool no sandbox holds, which is still asked.

The callback answers with :class:`PermissionResultAllow` (optionally with
edited input) or :class:`PermissionResultDeny` (the message goes to the model
as the tool's error result). A callback that raises, returns something else, or
takes longer than its timeout means *deny*.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

log = logging.getLogger("desktop_agent.permissions")

Decision = Literal["allow", "ask", "deny"]

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
"""How much runs without asking (claude-agent-sdk's names and meanings)."""
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)
#: The tool whose call is a plan waiting for approval (``plan`` mode offers it).
EXIT_PLAN_TOOL = "exit_plan_mode"
PLAN_MODE_REFUSAL = ("Plan mode: only read-only tools run now. Finish investigating, then "
                     f"call {EXIT_PLAN_TOOL} with your plan; nothing changes until the person "
                     "approves it.")


@dataclass(frozen=True, slots=True)
class PermissionResultAllow:
    """Let the tool run, with ``updated_input`` instead of the model's input if given."""

    updated_input: dict[str, Any] | None = None
    behavior: Literal["allow"] = "allow"


@dataclass(frozen=True, slots=True)
class PermissionResultDeny:
    """Do not run the tool; ``message`` is sent to the model as the reason."""

    message: str = "The user denied this tool call."
    interrupt: bool = False
    behavior: Literal["deny"] = "deny"


@dataclass(frozen=True, slots=True)
class PermissionResultDefer:
    """Decide later: the turn stops at this call, which waits in ``Client.pending_approvals``.

    For headless scripts: save the pending calls (they are plain data), end
    the process, and resume later with ``Client.approve()`` / ``Client.deny()``
    (see :mod:`desktop_agent.core.tooling.deferred_approvals`).
    """

    behavior: Literal["defer"] = "defer"


PermissionResult = PermissionResultAllow | PermissionResultDeny


@dataclass(frozen=True, slots=True)
class ToolPermissionContext:
    """What the approver knows about a call besides its name and input.

    Attributes:
        tool_use_id: The id of the call (stable; front ends key requests by it).
        read_only: Whether the tool declares that it changes nothing.
        source: Where the tool comes from (``builtin`` or an MCP server name).
        description: The tool's description.
        rule: The rule that asked, if one did.
        unsandboxed: The tool would run with the account's full rights (no OS
            sandbox): say so before approving, and never remember the approval.
        agent: The subagent whose call this is (None: the main agent), so the
            person sees who asks.
    """

    tool_use_id: str
    read_only: bool = False
    source: str | None = None
    description: str = ""
    rule: PermissionRule | None = None
    unsandboxed: bool = False
    agent: str | None = None


CanUseTool = Callable[[str, dict[str, Any], ToolPermissionContext],
                      Awaitable[PermissionResult | PermissionResultDefer]]


@dataclass(frozen=True, slots=True)
class PermissionRule:
    """One rule: a tool name glob, optional argument globs, and a decision.

    ``PermissionRule("bash", "deny", {"command": "rm -rf*"})`` denies bash calls
    whose ``command`` argument matches ``rm -rf*``. Argument values that are
    not strings are matched against their JSON text. All argument patterns must
    match for the rule to apply. ``read_only=True`` limits the rule to tools
    that declare themselves read-only.
    """

    tool: str
    decision: Decision
    arguments: Mapping[str, str] = field(default_factory=dict)
    read_only: bool | None = None

    def __post_init__(self) -> None:
        if self.decision not in ("allow", "ask", "deny"):
            raise ValueError(f"rule decision must be allow, ask or deny, not {self.decision!r}")
        if not self.tool:
            raise ValueError("rule needs a tool name or glob")

    def matches(self, tool_name: str, tool_input: Mapping[str, Any], read_only: bool) -> bool:
        """True when this rule applies to the call."""
        if not fnmatch.fnmatchcase(tool_name, self.tool):
            return False
        if self.read_only is not None and self.read_only != read_only:
            return False
        for key, pattern in self.arguments.items():
            if key not in tool_input:
                return False
            value = tool_input[key]
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            if not fnmatch.fnmatchcase(text, pattern):
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly form for settings files."""
        data: dict[str, Any] = {"tool": self.tool, "decision": self.decision}
        if self.arguments:
            data["arguments"] = dict(self.arguments)
        if self.read_only is not None:
            data["read_only"] = self.read_only
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PermissionRule:
        """Read a rule written by :meth:`to_dict` (raises ValueError if malformed)."""
        try:
            return cls(
                tool=str(data["tool"]),
                decision=data["decision"],
                arguments={str(k): str(v) for k, v in dict(data.get("arguments", {})).items()},
                read_only=data.get("read_only"),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed permission rule {data!r}") from exc


@dataclass(frozen=True, slots=True)
class RuleVerdict:
    """The outcome of evaluating rules: a decision and the rule behind it (if any).

    ``reason`` says why a call is refused when no rule did (the permission mode).
    """

    decision: Decision | None
    rule: PermissionRule | None = None
    reason: str | None = None


def apply_permission_mode(mode: PermissionMode, verdict: RuleVerdict, *, tool_name: str,
                          read_only: bool, edits_files: bool,
                          unsandboxed: bool) -> RuleVerdict:
    """What the permission mode makes of the rules' verdict on one call.

    Deny rules win in every mode. A plan waiting for approval
    (:data:`EXIT_PLAN_TOOL`) is always asked: no rule or mode approves a plan
    for the person. Otherwise:

    * ``default``: the rules' verdict (unsettled calls go to the approver).
    * ``acceptEdits``: a tool that edits files in the working folder runs
      unless an ask rule names it; commands and the rest as ``default``.
    * ``plan``: a tool that is not read-only is refused, whatever allows it.
    * ``bypassPermissions``: every call runs, except one no sandbox holds
      (still asked, as allow rules never run it unasked either).
    """
    if verdict.decision == "deny":
        return verdict
    if tool_name == EXIT_PLAN_TOOL:
        return RuleVerdict("ask", verdict.rule) if mode == "plan" else RuleVerdict(
            "deny", reason=f"{EXIT_PLAN_TOOL} is only for plan mode; the agent is not in it.")
    if mode == "plan":
        return verdict if read_only else RuleVerdict("deny", reason=PLAN_MODE_REFUSAL)
    if mode == "acceptEdits" and edits_files and verdict.decision != "ask":
        return RuleVerdict("allow", verdict.rule)
    if mode == "bypassPermissions":
        return RuleVerdict("ask" if unsandboxed else "allow", verdict.rule)
    return verdict


def evaluate_rules(
    rules: Iterable[PermissionRule],
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    read_only: bool = False,
    allowed_tools: Iterable[str] = (),
    disallowed_tools: Iterable[str] = (),
) -> RuleVerdict:
    """Settle a call by rules alone: deny beats ask beats allow; None means unsettled."""
    rules = list(rules)
    for pattern in disallowed_tools:
        if fnmatch.fnmatchcase(tool_name, pattern):
            return RuleVerdict("deny", PermissionRule(pattern, "deny"))
    for wanted in ("deny", "ask", "allow"):
        for rule in rules:
            if rule.decision == wanted and rule.matches(tool_name, tool_input, read_only):
                return RuleVerdict(wanted, rule)
        if wanted == "ask":
            for pattern in allowed_tools:
                if fnmatch.fnmatchcase(tool_name, pattern):
                    return RuleVerdict("allow", PermissionRule(pattern, "allow"))
    return RuleVerdict(None)


async def ask_callback(
    callback: CanUseTool,
    tool_name: str,
    tool_input: dict[str, Any],
    context: ToolPermissionContext,
    timeout: float | None,
) -> PermissionResult | PermissionResultDefer:
    """Ask the approver; any failure, odd answer or timeout becomes a deny."""
    try:
        result = await asyncio.wait_for(callback(tool_name, tool_input, context), timeout)
    except TimeoutError:
        return PermissionResultDeny(
            message=f"No answer to the approval request within {timeout:g} s; not run."
        )
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - an approver bug must never let a tool run
        log.warning("approval callback failed for %s: %s", tool_name, exc)
        return PermissionResultDeny(message="The approval check failed; not run.")
    if isinstance(result, PermissionResultAllow | PermissionResultDeny | PermissionResultDefer):
        return result
    log.warning("approval callback returned %r; treating it as deny", result)
    return PermissionResultDeny(message="The approval check gave no clear answer; not run.")

"""What an imported conversation may not bring with it.

An export file is data from anywhere: a crafted one set ``confirm_tools``
false, ``auto_execute`` true, ``workdir`` ``/`` and ``tools`` ``["bash"]``, so
the model's first reply ran commands in ``/`` without asking. Imported
settings therefore never weaken safety: anything that would let a tool run
without asking, reach further, or use one of the person's keys is reset to
the default a new conversation gets, and each reset is reported in a sentence.
Also refused here, before anything is written: numbers JSON cannot hold
(``NaN``, ``Infinity``) and nesting deeper than any real export.
"""

from __future__ import annotations

import math
from typing import Any

from desktop_agent.appdata.export_seal import SEAL_KEY, sealed_by_us
from desktop_agent.appdata.workdir_rule import WorkdirRefused, checked_workdir
from desktop_agent.store.errors import ImportFormatError

#: Deepest nesting of objects and arrays an import may have (real exports stay under 12).
MAX_DEPTH = 64
#: Tools an imported conversation may not switch on: they run commands or change files.
DROPPED_TOOLS = frozenset({"bash", "write_file", "edit_file"})
#: The conversation's own permission rules (see session.settings.permission_rules.RULES_KEY).
RULES_KEY = "permission_rules"
#: Command limits an import may lower but not raise: the defaults of CommandLimits.
LIMIT_DEFAULTS = {"command_memory_mb": 4096, "command_processes": 256, "command_file_mb": 1024,
                  "command_tmp_mb": 512}
#: Sandbox levels at least as strict as the default.
SAFE_SANDBOX = frozenset({"workdir", "read_only"})


def refuse_constant(name: str) -> float:
    """``json.loads(parse_constant=...)``: NaN and Infinity are not JSON."""
    raise ValueError(f"holds the number {name}, which JSON cannot represent; nothing was "
                     "imported")


def check_values(data: Any, source: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` and non-finite numbers (iteratively).

    Raises:
        ImportFormatError: With one sentence naming the problem.
    """
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ImportFormatError(source, f"holds the number {value!r}, which JSON cannot "
                                            "represent; nothing was imported")
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise ImportFormatError(source, f"is nested more than {MAX_DEPTH} levels deep, "
                                                "deeper than any conversation export; nothing "
                                                "was imported")
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


def make_safe(settings: dict[str, Any], conversation_id: str | None = None
              ) -> tuple[dict[str, Any], list[str]]:
    """``settings`` with everything that weakens safety reset, and a sentence per reset.

    Args:
        settings: The imported conversation's settings.
        conversation_id: Its id in the file; with the file's seal it tells
            this installation's own export (see :func:`_kept_workdir`).
    """
    safe = dict(settings)
    notes: list[str] = []
    if "confirm_tools" in safe and safe["confirm_tools"] is not True:
        del safe["confirm_tools"]
        notes.append("confirmation of tool calls was off; it is on again")
    if safe.get("auto_execute"):
        del safe["auto_execute"]
        notes.append("tools ran without asking (auto-execute); they ask again")
    rules = safe.get(RULES_KEY)
    if rules is not None:
        kept = [r for r in rules if isinstance(r, dict) and r.get("decision") in ("deny", "ask")] \
            if isinstance(rules, list) else []
        if kept != rules:
            notes.append("rules that allowed tools without asking were dropped")
            if kept:
                safe[RULES_KEY] = kept
            else:
                del safe[RULES_KEY]
    note = _kept_workdir(safe, conversation_id)
    if note:
        notes.append(note)
    if "sandbox" in safe and safe["sandbox"] not in SAFE_SANDBOX:
        del safe["sandbox"]
        notes.append("commands ran without a sandbox; the sandbox is on again")
    raised = [key for key, most in LIMIT_DEFAULTS.items()
              if key in safe and not (isinstance(safe[key], int) and safe[key] <= most)]
    if raised:
        for key in raised:
            del safe[key]
        notes.append(f"limits above the defaults ({', '.join(raised)}) were dropped")
    if "network" in safe and safe["network"] is not False:
        del safe["network"]
        notes.append("commands had network access; it is off again")
    tools = safe.get("tools")
    if tools is not None:
        listed = tools if isinstance(tools, list) else [tools]
        dropped = [str(t) for t in listed if not isinstance(t, str) or t in DROPPED_TOOLS]
        if dropped or not isinstance(tools, list):
            safe["tools"] = [t for t in listed if isinstance(t, str) and t not in DROPPED_TOOLS]
            notes.append(f"tools that run commands or change files were turned off "
                         f"({', '.join(dropped)[:200]}); turn them on again if you trust this "
                         "conversation")
    if "api_key_name" in safe:
        del safe["api_key_name"]
        notes.append("the API key it named was not kept (an import may not use your keys); "
                     "choose the key again")
    return safe, notes


def _kept_workdir(safe: dict[str, Any], conversation_id: str | None) -> str | None:
    """Keep the working folder only for this installation's own export, if the rule allows it.

    A folder named by a file from anywhere may be the data folder, another
    conversation's folder or a path a link will redirect, so an imported
    conversation gets a folder of its own; a folder sealed by this app's own
    export (:mod:`desktop_agent.appdata.export_seal`) is kept when it still
    passes :func:`~desktop_agent.appdata.workdir_rule.checked_workdir`.
    Returns the sentence to report, or None when nothing changed.
    """
    seal_value = safe.pop(SEAL_KEY, None)
    workdir = safe.pop("workdir", None)
    if workdir is None:
        return None
    shown = str(workdir)[:200]
    if not (isinstance(workdir, str) and conversation_id
            and sealed_by_us(conversation_id, workdir, seal_value)):
        return (f"the working folder {shown!r} came from a file this app did not export; "
                "the conversation gets a folder of its own")
    try:
        safe["workdir"] = str(checked_workdir(workdir))
    except WorkdirRefused as exc:
        return f"{exc}; the conversation gets a folder of its own"
    return None

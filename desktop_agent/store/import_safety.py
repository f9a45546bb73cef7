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
import os
from pathlib import Path
from typing import Any

from desktop_agent.store.errors import ImportFormatError

#: Deepest nesting of objects and arrays an import may have (real exports stay under 12).
MAX_DEPTH = 64
#: Tools an imported conversation may not switch on: they run commands or change files.
DROPPED_TOOLS = frozenset({"bash", "write_file", "edit_file"})
#: The conversation's own permission rules (see session.config.RULES_KEY).
RULES_KEY = "permission_rules"
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


def _inside(path: str, folder: Path) -> bool:
    try:
        resolved = Path(os.path.expanduser(path)).resolve()
        return resolved.is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def make_safe(settings: dict[str, Any], data_folder: Path) -> tuple[dict[str, Any], list[str]]:
    """``settings`` with everything that weakens safety reset, and a sentence per reset."""
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
    workdir = safe.get("workdir")
    if workdir is not None and not (isinstance(workdir, str) and _inside(workdir, data_folder)):
        del safe["workdir"]
        notes.append(f"the working folder {str(workdir)[:200]!r} is outside the app's data "
                     "folder; the conversation gets a folder of its own")
    if "sandbox" in safe and safe["sandbox"] not in SAFE_SANDBOX:
        del safe["sandbox"]
        notes.append("commands ran without a sandbox; the sandbox is on again")
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

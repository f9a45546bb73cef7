"""The tools a server conversation may name in its ``tools`` setting.

Built-in tools (file, search and shell tools confined to the conversation's
workdir) are made per conversation because they are bound to its folder and
its secrets. Extra tools handed to :func:`desktop_agent.server.create_app`
(scripts embedding the server, tests) are shared as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from desktop_agent.core.builtin_tools import builtin_tools
from desktop_agent.core.builtin_tools.sandbox import SandboxPolicy
from desktop_agent.core.builtin_tools.workdir import Workdir
from desktop_agent.core.tools import Tool


class ToolCatalogue:
    """Names the API accepts, and the Tool objects for a conversation's names."""

    def __init__(self, scratch_dir: Path, extra_tools: Sequence[Tool] = ()) -> None:
        scratch_dir.mkdir(parents=True, exist_ok=True)
        self._builtins = builtin_tools(Workdir(scratch_dir))
        self._builtin_names = [t.name for t in self._builtins]
        self._extra = {t.name: t for t in extra_tools}

    def listing(self) -> list[Tool]:
        """Every tool a conversation may name (built-ins first), for ``GET /tools``."""
        return [*self._builtins, *(t for name, t in sorted(self._extra.items())
                                   if name not in self._builtin_names)]

    @property
    def names(self) -> list[str]:
        """Every tool name a conversation may use."""
        return sorted({*self._builtin_names, *self._extra})

    def unknown(self, names: Sequence[str]) -> list[str]:
        """The names in ``names`` that no tool has."""
        known = set(self.names)
        return [n for n in names if n not in known]

    def build(self, names: Sequence[str], workdir: Workdir,
              env_secrets: Mapping[str, str], sandbox: SandboxPolicy | None = None
              ) -> list[Tool]:
        """The Tool objects for ``names``, in order; unknown names are skipped."""
        wanted = list(dict.fromkeys(names))
        builtins = {}
        if any(n in self._builtin_names for n in wanted):
            builtins = {t.name: t for t in builtin_tools(workdir, env_secrets=env_secrets,
                                                         sandbox=sandbox)}
        chosen = []
        for name in wanted:
            if name in self._extra:
                chosen.append(self._extra[name])
            elif name in builtins:
                chosen.append(builtins[name])
        return chosen

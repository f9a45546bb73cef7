"""Show the docstrings' Sphinx roles as code in the API reference.

The code's Google docstrings name other objects with Sphinx roles
(``:class:`~desktop_agent.core.types.Usage```, ``:meth:`update_options```), which
mkdocstrings would print as they are written. This griffe extension, loaded by
mkdocs.yml, turns each into a code span of the name a reader would type (``Usage``,
``update_options``), before the docstrings are parsed. The sources are not changed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):`(~?)\.?([^`]+)`")


def _as_code(match: re.Match[str]) -> str:
    short, target = match.groups()
    name = target.rsplit(".", 1)[-1] if short else target
    return f"`{name}`"


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx cross-reference roles in every docstring as Markdown code spans."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the docstring of each object as it is made."""
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_as_code, obj.docstring.value)

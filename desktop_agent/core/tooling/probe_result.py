"""What the tool-call probe measured for one model: scores per way of calling, and the winner.

Its own module because the automatic mode (:mod:`.tool_call_mode`) reads it and
the probe (:mod:`.tool_call_probe`) makes it, and the probe builds constrained
requests through a module that imports the mode: neither imports the other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: The ways of calling a probe scores, in the order they are shown.
WAYS = ("native", "text", "constrained")
_LABELS = {"native": "native calls", "text": "text-format calls", "constrained": "constrained"}


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """Right answers out of the probe's cases, per way of calling.

    Attributes:
        cases: How many cases each way was tried on.
        native: Cases right with the server's own ``tool_calls``.
        text: Cases right counting calls the model wrote as text in the same
            replies (``<tool_call>``, ``[TOOL_CALLS]``...), which the native
            mode reads too.
        constrained: Cases right with constrained decoding (None: the server
            refused it, or it was not tried).
        template_ignores_tools: The server's chat template drops ``tools``
            (llama.cpp; None: not known).
        error: Why the probe could not finish (the server stopped answering...).
    """

    cases: int
    native: int
    text: int
    constrained: int | None
    template_ignores_tools: bool | None = None
    error: str | None = None

    @property
    def constrained_wins(self) -> bool:
        """Whether constrained calls got more cases right than native calls read any way."""
        return self.constrained is not None and self.constrained > max(self.native, self.text)

    @property
    def summary(self) -> str:
        """The measured result in a line: ``native calls: 0 of 4; constrained: 4 of 4``."""
        parts = []
        for way in WAYS:
            score = getattr(self, way)
            if way == "text" and score == self.native:
                continue  # no call was written as text: nothing more to say
            shown = "refused by the server" if score is None else f"{score} of {self.cases}"
            parts.append(f"{_LABELS[way]}: {shown}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for the settings store and the REST API."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ProbeResult | None:
        """The result stored by :meth:`to_dict`, or None when ``data`` is not one."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(int(data["cases"]), int(data["native"]), int(data["text"]),
                       None if data.get("constrained") is None else int(data["constrained"]),
                       data.get("template_ignores_tools"), data.get("error"))
        except (KeyError, TypeError, ValueError):
            return None

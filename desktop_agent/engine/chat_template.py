"""Whether a model's chat template offers it tools.

llama.cpp renders the tools a request lists into the prompt only through the
template: a template that never reads ``tools`` (or writes ``tool_calls`` back)
leaves the model unaware of them, and it will not call any. Only Jinja code
counts (inside ``{% %}`` or ``{{ }}``): the word "tool" in the template's literal
text (a system prompt that says "You are a tool") offers nothing.
"""

from __future__ import annotations

import re

_JINJA_CODE = re.compile(r"\{[{%](.*?)[%}]\}", re.DOTALL)
_TOOL_NAMES = re.compile(r"\b(tools|tool_calls)\b")


def template_supports_tools(template: str | None) -> bool:
    """True when the template's Jinja code reads ``tools`` or ``tool_calls``."""
    if not template:
        return False
    return any(_TOOL_NAMES.search(code) for code in _JINJA_CODE.findall(template))

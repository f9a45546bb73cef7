"""Structured output: the final answer as a validated pydantic object.

``AgentOptions(output_type=Model)`` (or ``query(..., output_type=Model)``)
asks for JSON matching the type's schema and validates the final reply with
pydantic. Two ways to ask, chosen per server:

* **native**: ``response_format={"type": "json_schema", ...}``, which LM
  Studio, llama.cpp, vLLM and Ollama turn into constrained decoding. Used
  when the agent has no tools (a grammar would forbid the tool calls).
* **prompted**: the schema goes into the system prompt. Used with tools, and
  after a server refused ``response_format`` (an HTTP 4xx/5xx before any
  content): the request is sent again once without it, and the client
  remembers not to send it any more.

Either way a reply that does not validate is answered with the validation
errors and the model tries again, ``output_retries`` times; then
:class:`StructuredOutputError` says what came back and why it was refused.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from desktop_agent.core.errors import (
    AgentError,
    APIError,
    AuthenticationError,
    ContextTooLongError,
    ModelNotFoundError,
    RateLimitError,
)

if TYPE_CHECKING:
    from desktop_agent.core.options import AgentOptions

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class StructuredOutputError(AgentError):
    """The model's final reply never matched ``output_type``.

    Attributes:
        raw_text: The last reply, as the model wrote it.
        problems: The validation errors of that reply, in words.
        attempts: Replies that were tried.
    """

    def __init__(self, message: str, *, raw_text: str, problems: list[str],
                 attempts: int) -> None:
        super().__init__(message)
        self.raw_text = raw_text
        self.problems = problems
        self.attempts = attempts


def _type_name(output_type: Any) -> str:
    name = getattr(output_type, "__name__", None) or "output"
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(name))[:64] or "output"


def _json_text(text: str) -> str:
    """The JSON inside a reply: fenced code first, else from the first brace/bracket."""
    fenced = _FENCE.search(text)
    if fenced:
        return fenced.group(1).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text.strip()
    start = min(starts)
    end = max(text.rfind("}"), text.rfind("]"))
    return text[start:end + 1] if end > start else text[start:]


class StructuredOutput:
    """The output type of one client: its schema, its parser and the native/prompted choice.

    Attributes:
        output_type: What the final answer must validate as.
        native: Send ``response_format`` (False once a server refused it).
        attempts: Replies checked in the running turn.
    """

    def __init__(self, output_type: Any, retries: int, has_tools: bool) -> None:
        self.output_type = output_type
        self.retries = retries
        self.native = not has_tools
        self.attempts = 0
        self._adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        self.schema: dict[str, Any] = self._adapter.json_schema()
        self.name = _type_name(output_type)

    def start_turn(self) -> None:
        """A new query: count attempts from zero."""
        self.attempts = 0

    def apply(self, request: dict[str, Any]) -> None:
        """Ask for the schema in ``request``: natively, or in the system prompt."""
        if self.native:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": self.name, "schema": self.schema},
            }
            return
        instruction = ("When you give your final answer, reply with only a JSON value (no "
                       "prose, no code fence) that matches this JSON schema:\n"
                       + json.dumps(self.schema, ensure_ascii=False))
        messages = request["messages"]
        if messages and messages[0].get("role") == "system":
            messages[0] = {**messages[0],
                           "content": f"{messages[0].get('content') or ''}\n\n{instruction}"}
        else:
            messages.insert(0, {"role": "system", "content": instruction})

    def refused_natively(self, error: APIError, content_arrived: bool) -> bool:
        """True (and switch to prompting) when the server rejected ``response_format``."""
        if not self.native or content_arrived or error.status is None or error.status < 400:
            return False
        if isinstance(error, AuthenticationError | ContextTooLongError | ModelNotFoundError
                      | RateLimitError) or error.status in (401, 403, 404, 429):
            return False  # a refusal that has nothing to do with response_format
        self.native = False
        return True

    def parse(self, text: str) -> tuple[Any, list[str]]:
        """The validated object, or None and the problems in words."""
        self.attempts += 1
        try:
            return self._adapter.validate_json(_json_text(text)), []
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                        for e in exc.errors()]
            return None, problems

    def can_retry(self) -> bool:
        """Another reply may be asked for."""
        return self.attempts <= self.retries

    def correction(self, problems: list[str]) -> dict[str, Any]:
        """The user message that asks for a corrected reply."""
        listed = "\n".join(f"- {p}" for p in problems[:10])
        return {"role": "user", "content": (
            "Your reply did not match the required JSON schema:\n" + listed
            + "\nReply again with only the corrected JSON.")}

    def settle(self, text: str, history: list[dict[str, Any]]) -> tuple[bool, Any]:
        """Check a final reply: ``(True, value)``, or ``(False, None)`` with a correction queued.

        Raises:
            StructuredOutputError: the last allowed reply did not validate either.
        """
        value, problems = self.parse(text)
        if not problems:
            return True, value
        if not self.can_retry():
            raise self.failure(text, problems)
        history.append(self.correction(problems))
        return False, None

    def failure(self, text: str, problems: list[str]) -> StructuredOutputError:
        """The error raised after the last attempt."""
        return StructuredOutputError(
            f"the model's reply did not match {self.name} after {self.attempts} "
            f"attempt(s): {'; '.join(problems[:3])}",
            raw_text=text, problems=problems, attempts=self.attempts)


def structured_output_for(options: AgentOptions) -> StructuredOutput | None:
    """The structured output of ``options``, or None when it has no ``output_type``."""
    if options.output_type is None:
        return None
    return StructuredOutput(options.output_type, options.output_retries, bool(options.tools))

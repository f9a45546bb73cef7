"""What a tools config file may hold, as pydantic models, and the words for a malformed value.

The models check the shape (types, the ``http(s)://`` scheme, positive
timeouts, the two spellings ``type``/``transport``) that the file's readers
used to check by hand, one ``isinstance`` at a time. Pydantic's own messages
("Input should be a valid list") name a type, not the fix, so each field
carries a :class:`Says`: the sentence a person reads, which
:func:`first_problem` joins to the place (file, server, key) of the first
problem. Turning an entry into the SDK's runtime types
(:class:`~desktop_agent.core.tooling.config.McpServerConfig`,
:class:`~desktop_agent.core.tooling.permissions.PermissionRule`) is
:mod:`desktop_agent.core.tooling.config`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

_OWN_WORDS = "config_words"
"""Error type of problems a model validator words itself (used as they are)."""


@dataclass(frozen=True, slots=True)
class Says:
    """The sentence a malformed field gets (it follows the field's place).

    ``{input}`` in a sentence is replaced by the value found (as Python writes it).

    Attributes:
        whole: For the field's value as a whole ("must be a list of strings").
        each: For one value of a mapping field, placed under its key
            (``env.TOKEN must be ...``); None: ``whole`` serves for those too.
    """

    whole: str
    each: str | None = None


_NAMED_VALUES = Says("must be an object of names to values",
                     each='must be a string or {"secret": "<keyring name>"}')
_SECONDS = Says("must be a positive number of seconds")
_TRUE_FALSE = Says("must be true or false")


class SecretEntry(BaseModel):
    """``{"secret": "<keyring name>"}``: a value looked up in the keyring at start."""

    model_config = ConfigDict(strict=True, extra="forbid")

    secret: str = Field(min_length=1)


class ServerEntry(BaseModel):
    """One ``mcpServers`` entry as written: a command (stdio) or a URL (HTTP or HTTP+SSE).

    Strict: ``"true"`` is not true and ``true`` is not a number of seconds, as
    in the hand-written checks this replaces. Unknown keys are kept in
    ``model_extra`` (the reader logs them, other MCP clients may use them).
    """

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)

    command: Annotated[str | None, Says("must be a non-empty string")] = Field(
        default=None, pattern=r"\S")
    args: Annotated[list[str], Says("must be a list of strings")] = Field(default_factory=list)
    cwd: Annotated[str | None, Says("must be a string")] = None
    env: Annotated[dict[str, str | SecretEntry], _NAMED_VALUES] = Field(default_factory=dict)
    url: Annotated[str | None, Says("must be an http:// or https:// address")] = Field(
        default=None, pattern=r"^https?://")
    headers: Annotated[dict[str, str | SecretEntry], _NAMED_VALUES] = Field(
        default_factory=dict)
    kind: Annotated[
        Literal["stdio", "http", "streamable-http", "streamableHttp", "sse"] | None,
        Says('must be "stdio", "http" or "sse": {input} is not supported; use a command '
             '(stdio), a streamable HTTP url, or "sse" for the older HTTP+SSE transport'),
    ] = Field(default=None, validation_alias=AliasChoices("type", "transport"))
    disabled: Annotated[bool, _TRUE_FALSE] = False
    enabled: Annotated[bool, _TRUE_FALSE] = True
    timeout: Annotated[float | None, _SECONDS] = Field(default=None, gt=0)
    startup_timeout: Annotated[float | None, _SECONDS] = Field(
        default=None, gt=0, alias="startupTimeout")
    description: Any = None
    trusted: Annotated[bool, _TRUE_FALSE] = False

    @model_validator(mode="after")
    def _one_way_to_reach_it(self) -> ServerEntry:
        if self.command is None and self.url is None:
            raise PydanticCustomError(_OWN_WORDS, 'needs either a "command" or a "url"')
        if self.command is not None and self.url is not None:
            raise PydanticCustomError(_OWN_WORDS, 'has both "command" and "url"; keep one')
        return self


class RuleEntry(BaseModel):
    """One permission rule as written: which tool, which decision, optional argument globs."""

    model_config = ConfigDict(strict=True, extra="ignore")

    tool: Annotated[str, Says("must be a tool name or glob")] = Field(min_length=1)
    decision: Annotated[Literal["allow", "ask", "deny"],
                        Says('must be "allow", "ask" or "deny"')]
    arguments: Annotated[dict[str, str], Says("must map argument names to glob strings")] = (
        Field(default_factory=dict))
    read_only: Annotated[bool | None, Says("must be true, false or absent")] = None


def first_problem(exc: ValidationError, model: type[BaseModel], place: str) -> str:
    """The first problem pydantic found, as ``<place>.<field> <sentence>``.

    Args:
        exc: What validating one entry of ``model`` raised.
        model: The entry's model, whose fields carry the sentences.
        place: Where the entry is, e.g. ``<file>: mcpServers.time``.
    """
    error = exc.errors()[0]
    loc = error["loc"]
    if error["type"] == _OWN_WORDS:
        return f"{place} {error['msg']}"
    if not loc:
        return f"{place} must be an object"
    says = _says(model, str(loc[0]))
    if says is None:  # a field without words of its own: pydantic's are still clear
        return f"{place}.{loc[0]}: {error['msg']}"
    found = repr(error.get("input"))
    if says.each is not None and len(loc) > 1:
        return f"{place}.{loc[0]}.{loc[1]} {says.each.replace('{input}', found)}"
    return f"{place}.{loc[0]} {says.whole.replace('{input}', found)}"


def _says(model: type[BaseModel], name: str) -> Says | None:
    """The sentence of the field that ``name`` (its key in the file) fills."""
    for field_name, info in model.model_fields.items():
        aliases = {field_name, info.alias}
        if isinstance(info.validation_alias, AliasChoices):
            aliases.update(str(choice) for choice in info.validation_alias.choices)
        if name in aliases:
            return next((m for m in info.metadata if isinstance(m, Says)), None)
    return None

"""ConversationSettings: the one typed schema of a conversation's settings.

The store keeps settings as a JSON object; every front end reads and writes
the same keys. This model is that list of keys with their types and limits:
the REST API's request models derive from it (so the OpenAPI document shows
it), the window's settings dialog writes through :func:`checked_changes`, and
an import is checked with :func:`stored_settings`. The store itself sits
below this package (it may not import it) and keeps only its own safety
checks (no secrets in settings, a known sandbox level).

Settings the schema does not know are kept as they are when read from the
store (an older or newer app may have written them); the API refuses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from desktop_agent.session.settings.plain_settings import WEB_ADDRESS
from desktop_agent.session.settings.plain_settings import WEB_ADDRESS_RE as _WEB_ADDRESS
from desktop_agent.session.settings.setting_values import asks_before_tools, has_server

__all__ = ["KNOWN_KEYS", "ConversationSettings", "SettingsError", "asks_before_tools",
           "checked_changes", "has_server", "invalid_keys", "stored_settings"]

SandboxLevel = Literal["workdir", "read_only", "off"]
PermissionModeSetting = Literal["default", "acceptEdits", "plan", "bypassPermissions"]



class SettingsError(ValueError):
    """Settings that break the schema; the message names the key, in words."""


class ConversationSettings(BaseModel):
    """How a conversation talks to its model; every key is optional.

    ``api_key_name`` is the *name* of a keyring entry (for example
    ``api:LM Studio`` or ``conv:<id>:OPENAI_KEY``), never a key. Defaults for
    keys left out are in :mod:`desktop_agent.session.settings.defaults`.
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(
        default=None, max_length=2000, json_schema_extra={"pattern": WEB_ADDRESS},
        description="The model server's OpenAI-compatible root, e.g. http://127.0.0.1:1234/v1",
    )
    server: Literal["local"] | None = Field(
        default=None,
        description="'local': the model runs on this computer, in the app's own engine "
                    "(llama.cpp); `model` then names it (a .gguf file's path, a file name, an "
                    "Ollama name:tag or a catalog id) and `base_url` is not used. The engine is "
                    "started at the turn's start when it is not running.")
    model: str | None = Field(default=None, min_length=1, max_length=4000)
    api_key_name: str | None = Field(default=None, min_length=1, max_length=500)
    system_prompt: str | None = Field(default=None, max_length=200_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    tools: list[str] | None = Field(
        default=None, max_length=200,
        description="Tool names the model is offered; left out: every tool; []: none.")
    max_tool_iterations: int | None = Field(default=None, ge=0, le=100)
    workdir: str | None = Field(default=None, min_length=1, max_length=4000)
    context_length: int | None = Field(default=None, ge=1, le=100_000_000)
    compaction: Literal["summarise", "drop_oldest", "off"] | None = Field(
        default=None,
        description="When a request nears context_length: 'summarise' the oldest messages by "
                    "the same model (default), 'drop_oldest' or 'off'. Only the request is "
                    "compacted; the conversation keeps every message.")
    confirm_tools: bool | None = Field(
        default=None, description="Confirmation mode (default on): tool calls no rule allows "
                                  "wait for approve/reject.")
    auto_execute: bool | None = Field(
        default=None, description="The window's older name for confirm_tools=false; "
                                  "confirm_tools wins when both are set.")
    sandbox: SandboxLevel | None = Field(
        default=None,
        description="Where commands (bash, /commands) may reach: 'workdir' (default: the "
                    "working folder read-write, the system read-only, home and the data folder "
                    "invisible), 'read_only' (the working folder read-only too) or 'off' (no "
                    "sandbox; every such call is asked and never remembered).")
    network: bool | None = Field(
        default=None, description="Whether commands may use the network (default false).")
    command_preview: Literal["folder", "preview"] | None = Field(
        default=None,
        description="'folder' (default): the model's commands run on the working folder. "
                    "'preview': each runs first on an overlay of it (the sandbox as set, the "
                    "folder untouched) and its changes wait for Apply or Discard. Where "
                    "overlays cannot work, commands run on the folder.")
    command_memory_mb: int | None = Field(
        default=None, ge=16, le=1 << 20,
        description="Memory (virtual, per process) each sandboxed command may use, in MiB "
                    "(default 4096).")
    command_processes: int | None = Field(
        default=None, ge=4, le=100_000,
        description="Processes a sandboxed command may run at once (default 256).")
    command_file_mb: int | None = Field(
        default=None, ge=1, le=1 << 20,
        description="Largest file a sandboxed command may write, in MiB (default 1024).")
    command_tmp_mb: int | None = Field(
        default=None, ge=1, le=1 << 20,
        description="Size of a sandboxed command's private /tmp, in MiB (default 512).")
    vision: bool | None = Field(
        default=None, description="Whether the model reads pictures: false refuses messages "
                                  "with images before anything is sent; null means unknown.")
    constrained_tool_calls: bool | None = Field(
        default=None, description="Constrained decoding for tool calls: the server may only "
                                  "produce valid calls of offered tools or a plain answer. "
                                  "For small models that misspell tools or arguments; needs "
                                  "a server with JSON-schema response_format (llama.cpp, LM "
                                  "Studio, vLLM, Ollama). true: always; false: never (native "
                                  "calls); null (default): automatic, used where the server "
                                  "supports it and the model is not known to call tools "
                                  "natively.")
    tool_decision: bool | None = Field(
        default=None, description="With constrained calls, ask the model first whether one "
                                  "of the offered tools does what the message asks (two "
                                  "one-token requests read through the server's logprobs); "
                                  "'no' holds the reply to an answer. Fewer unwanted calls, "
                                  "but a small model may also miss right ones. Default off.")
    extra_body: dict[str, Any] | None = Field(
        default=None, description="Extra request fields for the model server (e.g. "
                                  "llama.cpp's cache_prompt, top_p, seed).")
    checkpoint_excluded: list[str] | None = Field(
        default=None, max_length=200,
        description="Folders left out of the working folder's checkpoints (a name such as "
                    "'node_modules' at any depth, or a path such as 'build/cache'); undo "
                    "never brings back what is in them. Default: none ('.git' always is).")
    project_instructions: bool | None = Field(
        default=None, description="Whether the working folder's AGENTS.md (or CLAUDE.md when "
                                  "there is no AGENTS.md) goes into the system prompt, its "
                                  "first 32 KiB, re-read each turn (default true).")
    skills_off: list[str] | None = Field(
        default=None, max_length=500,
        description="Skills (by name) this conversation does not offer the model; the "
                    "others' names and descriptions go into the system prompt.")
    permission_mode: PermissionModeSetting | None = Field(
        default=None,
        description="claude-agent-sdk's permission modes: 'default' (rules, then ask), "
                    "'acceptEdits' (file edits in the working folder run unasked; commands "
                    "still ask), 'plan' (only read-only tools run; the model hands in a plan "
                    "whose approval switches to 'default' or 'acceptEdits') or "
                    "'bypassPermissions' (everything runs but deny rules; refused unless the "
                    "command sandbox is active).")
    permission_rules: list[dict[str, Any]] | None = Field(
        default=None, max_length=500,
        description="This conversation's own allow/ask/deny rules (config.json holds the "
                    "global ones).")

    @field_validator("base_url")
    @classmethod
    def _base_url_is_a_web_address(cls, value: str | None) -> str | None:
        # Python's re, not Field(pattern=...): pydantic-core compiles a pattern with its
        # own regex engine, whose first use costs ~0.3 MB resident, and these settings are
        # checked in an idle window as soon as its server search finds a model server.
        if value is not None and _WEB_ADDRESS.fullmatch(value) is None:
            raise ValueError("must start with http:// or https:// and contain no spaces")
        return value

    @field_validator("tools")
    @classmethod
    def _tool_names_are_names(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for name in value:
                if not name or len(name) > 200:
                    raise ValueError("tool names must be 1 to 200 characters")
        return value


KNOWN_KEYS = frozenset(ConversationSettings.model_fields)


def _sentence(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "settings"
        parts.append(f"'{where}': {error['msg']}")
    return "Invalid setting " + "; ".join(parts) + "."


def stored_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Check a whole settings dict as stored (known keys typed, unknown kept).

    Raises:
        SettingsError: A known key has a wrong type or value.
    """
    known = {k: v for k, v in settings.items() if k in KNOWN_KEYS and v is not None}
    try:
        ConversationSettings.model_validate(known)
    except ValidationError as exc:
        raise SettingsError(_sentence(exc)) from exc
    return dict(settings)


def invalid_keys(settings: Mapping[str, Any]) -> list[str]:
    """Known keys whose values break the schema (an import from an older or edited file)."""
    known = {k: v for k, v in settings.items() if k in KNOWN_KEYS and v is not None}
    try:
        ConversationSettings.model_validate(known)
    except ValidationError as exc:
        return sorted({str(error["loc"][0]) for error in exc.errors() if error["loc"]})
    return []


def checked_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Check a patch (``None`` removes a key) before it is saved.

    Raises:
        SettingsError: A known key has a wrong type or value.
    """
    stored_settings({k: v for k, v in changes.items() if v is not None})
    return dict(changes)


def _install_in_the_store() -> None:
    from desktop_agent.store.write_checks import use_settings_schema

    use_settings_schema(invalid_keys)


_install_in_the_store()  # every process with the session layer checks writes against it


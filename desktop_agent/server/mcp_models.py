"""Request and response bodies of the MCP, slash command and skill routes.

Kept apart from :mod:`.api_models` because they describe one feature's records
(what a conversation's MCP servers offer and ask, its commands and skills), read only
by :mod:`.routes.mcp` and :mod:`.routes.slash_commands`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_NAME = Field(min_length=1, max_length=200)


class PromptArgumentOut(BaseModel):
    name: str
    description: str | None
    required: bool


class PromptOut(BaseModel):
    server: str
    name: str
    title: str | None
    description: str | None
    command: str = Field(description="How it is typed after '/': 'server:name'.")
    arguments: list[PromptArgumentOut]


class PromptList(BaseModel):
    prompts: list[PromptOut]


class PromptRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, str] = Field(default_factory=dict,
                                      description="The prompt's arguments by name.")


class PromptTextOut(BaseModel):
    text: str = Field(description="The message to send (shown to the person first).")
    images: list[str] = Field(description="Pictures the prompt holds, as data: URIs.")
    cut: bool = Field(description="Whether the text was cut at the size limit.")
    size: int = Field(description="Characters the text had before any cut.")
    messages: list[list[str]] = Field(description="[role, text] of each message.")


class ResourceOut(BaseModel):
    server: str
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    size: int | None


class TemplateOut(BaseModel):
    server: str
    uri_template: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    parameters: list[str] = Field(description="The template's variables, in order.")


class ResourceList(BaseModel):
    resources: list[ResourceOut]
    templates: list[TemplateOut]


class ResourceRead(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str = _NAME
    uri: str = Field(min_length=1, max_length=10_000)


class ContentOut(BaseModel):
    uri: str
    name: str
    mime_type: str | None
    text: str | None
    image_url: str | None
    size: int
    cut: bool
    binary: bool = Field(description="Neither text nor picture: only named when attached.")


class ContentList(BaseModel):
    contents: list[ContentOut]


class CompletionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str = _NAME
    ref_type: Literal["prompt", "template"]
    ref: str = Field(min_length=1, max_length=10_000,
                     description="The prompt's name or the template's URI template.")
    argument: str = _NAME
    value: str = Field(default="", max_length=10_000)
    context: dict[str, str] = Field(default_factory=dict,
                                    description="Arguments filled already.")


class CompletionOut(BaseModel):
    values: list[str]


class ServerQuestionOut(BaseModel):
    id: str
    kind: Literal["sampling", "elicitation"]
    server: str
    timeout: float | None
    details: dict[str, Any] = Field(
        description="Sampling: messages, system_prompt, max_tokens, temperature. "
                    "Elicitation: message, mode ('form' or 'url'), url, fields.")


class ServerQuestionList(BaseModel):
    questions: list[ServerQuestionOut]


class SamplingAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    choice: Literal["allow_once", "allow_server", "deny"]


class ElicitationReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = Field(
        default=None, description="The form's values (accept only), checked against it.")


class QuestionAnswered(BaseModel):
    id: str
    answer: str


def question_out(body: dict[str, Any]) -> ServerQuestionOut:
    """A question's JSON (``ServerQuestion.to_dict``) as the route's model."""
    head = {k: body[k] for k in ("id", "kind", "server", "timeout")}
    return ServerQuestionOut(**head, details={k: v for k, v in body.items() if k not in head})


class SlashArgumentOut(BaseModel):
    name: str
    description: str
    required: bool


class SlashCommandOut(BaseModel):
    name: str = Field(description="What follows '/'.")
    kind: Literal["builtin", "command", "prompt"] = Field(
        description="builtin: run by its own route (/compact: POST .../compact; /help: "
                    "this list); command: a Markdown file; prompt: an MCP server's prompt.")
    description: str
    argument_hint: str | None
    arguments: list[SlashArgumentOut] = Field(
        description="Named arguments (required ones first): give them as 'values' to "
                    ".../slash-commands/expand.")


class SlashCommandList(BaseModel):
    commands: list[SlashCommandOut]
    skipped: list[str] = Field(description="Command files that could not be used, and why.")


class ExpandRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=2, max_length=100_000, pattern=r"^/",
                      description="What was typed: '/name arguments'.")
    values: dict[str, str] | None = Field(
        default=None, description="The arguments by name (instead of typing them after "
                                  "the name), as the command's 'arguments' list them.")


class CompactionOut(BaseModel):
    compacted: bool = Field(description="False: nothing to compact (one exchange only, or "
                                        "the model's window is not known yet).")
    messages: int = Field(default=0, description="Messages the summary now stands in for.")
    mode: Literal["summarise", "drop_oldest"] | None = None
    summary: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0


class ExpansionOut(BaseModel):
    name: str
    kind: Literal["command", "prompt"]
    message: str = Field(description="The message to send (show it first).")
    images: list[str]
    notes: list[str]


class SkillOut(BaseModel):
    name: str
    description: str
    folder: str
    scope: Literal["project", "user"]
    enabled: bool = Field(description="False when the conversation's skills_off names it.")
    tokens: int = Field(description="Tokens its name and description cost in the system "
                                    "prompt (while it is on).")


class SkillList(BaseModel):
    skills: list[SkillOut]
    skipped: list[str] = Field(description="Skill folders that could not be used, and why.")
    prompt_tokens: int = Field(0, description="Tokens the skills section of the system "
                                              "prompt costs with the skills that are on.")

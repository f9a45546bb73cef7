"""What ``POST .../messages`` and ``POST .../run`` accept as a message's content.

A string, or OpenAI content parts: text, and pictures as ``image_url`` parts
holding a base64 ``data:`` URI (PNG, JPEG, GIF or WebP, checked against their
bytes by :mod:`desktop_agent.image_data`). The parts are stored as sent, so
the window and exports show the same picture the model saw.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from desktop_agent.core.context.content_parts import has_images
from desktop_agent.image_data import ImageDataError, decode_data_uri

MAX_PARTS = 64


class TextPartIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["text"]
    text: str = Field(max_length=1_000_000)


class ImageUrlIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="data:image/png;base64,... (PNG, JPEG, GIF or WebP; links "
                                 "are refused: the conversation keeps the picture itself).")
    detail: Literal["auto", "low", "high"] | None = None

    @field_validator("url")
    @classmethod
    def _embedded_picture(cls, value: str) -> str:
        try:
            decode_data_uri(value)
        except ImageDataError as exc:
            raise ValueError(str(exc)) from None
        return value


class ImagePartIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["image_url"]
    image_url: ImageUrlIn


ContentPartIn = Annotated[TextPartIn | ImagePartIn, Field(discriminator="type")]
MessageContent = str | Annotated[list[ContentPartIn], Field(min_length=1, max_length=MAX_PARTS)]


def stored_content(content: str | list[Any]) -> str | list[dict[str, Any]]:
    """The content as the store and the model get it (parts as plain dicts)."""
    if isinstance(content, str):
        return content
    return [part.model_dump(exclude_none=True) for part in content]


def refuse_if_blind(settings: dict[str, Any], content: str | list[dict[str, Any]]) -> None:
    """A picture for a conversation whose model is set not to see: a 422 with a sentence.

    Raises:
        ApiError: ``vision_not_supported`` (nothing was stored).
    """
    if settings.get("vision") is False and has_images(content):
        from .api_errors import ApiError

        raise ApiError(422, "vision_not_supported",
                       f"The model {settings.get('model')!r} of this conversation cannot see "
                       "images (its setting 'vision' is false). Send the message without the "
                       "picture, or pick a vision model.")

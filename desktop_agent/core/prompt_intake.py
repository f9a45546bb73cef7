"""From what a person typed (text or content parts) to the user message that is sent.

The UserPromptSubmit hooks see the prompt's text and may block or rewrite it;
pictures are kept as content parts and checked against the model's vision
before anything is queued.
"""

from __future__ import annotations

from typing import Any

from desktop_agent.core import errors
from desktop_agent.core.context.content_parts import (
    Prompt,
    check_parts,
    check_vision,
    has_images,
    prompt_text,
    with_text,
)
from desktop_agent.core.options import AgentOptions
from desktop_agent.core.tooling.hooks import (
    HOOK_USER_PROMPT_SUBMIT,
    UserPromptSubmitEvent,
    run_hooks,
    stamped,
)


async def user_message(prompt: Prompt | None, options: AgentOptions,
                       history: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``user`` message for ``prompt`` after hooks and checks.

    Raises:
        PromptBlockedError: a UserPromptSubmit hook refused the prompt.
        VisionNotSupportedError: the prompt has a picture and the model cannot see.
        ConfigurationError: the prompt is empty, or a content part is malformed.
    """
    parts: list[dict[str, Any]] | None = None
    if isinstance(prompt, str) or prompt is None:
        text = prompt or ""
    else:
        parts = check_parts(prompt)
        text = prompt_text(parts)
    decision = await run_hooks(options.hooks, HOOK_USER_PROMPT_SUBMIT,
                               stamped(UserPromptSubmitEvent(text, history), options))
    if decision is not None:
        if not decision.continue_:
            raise errors.PromptBlockedError(decision.reason or "a hook blocked the prompt")
        if decision.modified_prompt is not None:
            text = decision.modified_prompt
    content: str | list[dict[str, Any]] = text
    if parts is not None and has_images(parts):
        content = with_text(parts, text)  # text-only parts go as a plain string
    if not text.strip() and not (parts and content):
        if decision is not None and decision.modified_prompt is not None:
            raise errors.PromptBlockedError(
                "a hook replaced the prompt with an empty one; nothing was sent")
        raise errors.ConfigurationError("the prompt is empty")
    check_vision([{"role": "user", "content": content}], options.vision, options.model)
    return {"role": "user", "content": content}


def take_back_refused(history: list[dict[str, Any]], picture_prompt: int | None) -> bool:
    """Take back the new prompt whose picture the server refused, as if never sent.

    Only when the refusal answered that prompt itself (``picture_prompt`` is the
    history's last entry): kept, it would make every later request refused too,
    plain text included, and the advice "send it again without the picture" useless.

    Returns:
        True when the prompt was taken back.
    """
    if picture_prompt is None or picture_prompt != len(history) - 1:
        return False
    del history[picture_prompt]
    return True

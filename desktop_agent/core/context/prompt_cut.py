"""Telling a prompt the server cut from the core's counting error.

Ollama's OpenAI-compatible route answers a prompt longer than the model's
``num_ctx`` without an error: it drops the oldest messages, keeping the system
messages and the last one (``server/prompt.go``, ``chatPrompt``), and reports
the tokens it read as ``usage.prompt_tokens`` (cached ones included). The
core counts every request it sends (:mod:`.prompt_size`, cl100k), so a server
count that falls short of the core's beyond what tokenizers explain is a cut.

Three signs, each above counting error:

* **The window.** The server is known to apply N tokens, the prompt was
  clearly over N, and the server read at most N.
* **The growth.** A conversation's prompts grow at their end: from one
  request to the next the server's count grows with the new messages. Every
  tokenizer counts a new message at a fair share of cl100k's count (0.5x for
  the densest on other scripts, about 1x on English and code), so a count that
  grows by less than :data:`GROWTH_SHARE` of the core's growth, or shrinks,
  means older messages were dropped. The previous prompt must have been read
  whole, and the view must only have grown (no compaction in between).
* **The whole.** Without either, a count under :data:`CUT_SHARE` of the
  core's (scaled by what the server counted for earlier whole prompts) is a cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: A server count under this share of the expected one is a cut, not counting error.
CUT_SHARE = 0.7
#: A server count growing by less than this share of the core's growth is a cut.
GROWTH_SHARE = 0.3
#: Differences smaller than this many tokens are never called a cut.
MIN_MISSING = 64
#: How far over a known window the expected count must be for "inside the window" to count.
OVER_WINDOW = 1.1


@dataclass(frozen=True, slots=True)
class WholePrompt:
    """The last prompt the server read whole: the core's count and the server's."""

    sent: int
    read: int

    @property
    def share(self) -> float:
        """The server's count over the core's (its tokenizer and template)."""
        return self.read / self.sent


def cut_to(sent: int, prompt_tokens: Any, last: WholePrompt | None,
           window: int | None) -> int | None:
    """The server's count when it shows the prompt was cut; None when it read it all.

    Args:
        sent: The core's count of the request just sent.
        prompt_tokens: The server's ``usage.prompt_tokens`` for it.
        last: The previous request of the same view, read whole (None: none).
        window: The window the server is known to apply, in its tokens (None: unknown).
    """
    if not isinstance(prompt_tokens, int) or isinstance(prompt_tokens, bool) \
            or prompt_tokens <= 0 or sent <= 0:
        return None
    expected = sent * (last.share if last is not None else 1.0)
    if expected - prompt_tokens < MIN_MISSING:
        return None
    if window is not None and prompt_tokens <= window and expected > window * OVER_WINDOW:
        return prompt_tokens
    if last is not None and sent - last.sent >= MIN_MISSING and \
            prompt_tokens - last.read < GROWTH_SHARE * (sent - last.sent):
        return prompt_tokens
    return prompt_tokens if prompt_tokens < expected * CUT_SHARE else None

"""How fast a server processes prompts, and when the fixed part of a prompt is too slow.

Before the first token a server reads the whole prompt. On a laptop CPU a
small model may generate at 18 tokens/s yet read only ~40 prompt tokens/s, so a
prompt of 1,000 tokens (most of it tool schemas, the system prompt and
AGENTS.md: the *fixed* part, the same at every request) keeps a person waiting
25 s for the first word. The prefix cache removes that from the second request
on, when the prefix stays byte-identical; a person should still know, and what
helps.

The speed is measured, never guessed: llama.cpp reports ``prompt_per_second``
with the tokens it evaluated (``prompt_n``); otherwise the prompt tokens
evaluated over the time to the first token give a lower bound. Requests that
evaluated only a few tokens (the rest came from the cache) say little about
the speed and are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop_agent.core.types import Usage

#: The fixed prefix may take this long to process before a warning is due.
SLOW_PREFIX_SECONDS = 5.0
#: Requests that evaluated fewer tokens than this do not measure the speed.
MIN_MEASURED_TOKENS = 64
_WEIGHT = 0.5  # of a new measurement against the estimate so far

Key = tuple[str, str]
_SPEEDS: dict[Key, float] = {}


def _key(base_url: str, model: str) -> Key:
    return base_url.rstrip("/"), model


def observe(base_url: str, model: str, *, evaluated: int | None,
            tokens_per_second: float | None = None,
            first_token_seconds: float | None = None) -> float | None:
    """Take one request's figures; the server's estimated prompt speed (tokens/s) after it.

    Args:
        base_url: The server's OpenAI-compatible root.
        model: The model the request went to (each model reads at its own speed).
        evaluated: Prompt tokens the server processed afresh (None: not said).
        tokens_per_second: The server's own prompt speed (llama.cpp's timings).
        first_token_seconds: Time to the first token, when the server gives no speed.
    """
    key = _key(base_url, model)
    if evaluated is None or evaluated < MIN_MEASURED_TOKENS:
        return _SPEEDS.get(key)
    speed = tokens_per_second
    if speed is None and first_token_seconds:
        speed = evaluated / first_token_seconds
    if speed is None or speed <= 0:
        return _SPEEDS.get(key)
    known = _SPEEDS.get(key)
    _SPEEDS[key] = speed if known is None else known + _WEIGHT * (speed - known)
    return _SPEEDS[key]


def observe_usage(base_url: str, model: str, usage: Usage) -> float | None:
    """:func:`observe` with a turn's figures (its first request's prompt)."""
    evaluated = usage.prompt_tokens_evaluated
    if evaluated is None and usage.prompt_tokens is not None:
        evaluated = usage.prompt_tokens - (usage.cached_prompt_tokens or 0)
    return observe(base_url, model, evaluated=evaluated,
                   tokens_per_second=usage.prompt_tokens_per_second,
                   first_token_seconds=usage.time_to_first_token)


def speed(base_url: str, model: str) -> float | None:
    """The estimated prompt speed of this server and model, once measured in this process."""
    return _SPEEDS.get(_key(base_url, model))


def forget(base_url: str | None = None) -> None:
    """Forget the estimates (one server's, or all): after a restart, and in tests."""
    for key in [k for k in _SPEEDS if base_url is None or k[0] == base_url.rstrip("/")]:
        del _SPEEDS[key]


@dataclass(frozen=True, slots=True)
class SlowPrompt:
    """The fixed part of the prompt takes long to process: the figures and what helps.

    Attributes:
        fixed_tokens: Tokens of the system prompt, instructions and tool schemas.
        schema_tokens: Of those, the tool schemas'.
        tokens_per_second: The server's measured prompt speed.
        offers: What helps, as ``(id, sentence)``: ``prompt_cache``, ``fewer_tools``,
            ``constrained_schemas``; only those that apply.
    """

    fixed_tokens: int
    schema_tokens: int
    tokens_per_second: float
    offers: tuple[tuple[str, str], ...]

    @property
    def seconds(self) -> float:
        """How long the fixed part takes to process, uncached."""
        return self.fixed_tokens / self.tokens_per_second

    @property
    def sentence(self) -> str:
        """The warning in words, with its figures."""
        return (f"The fixed part of every prompt ({self.fixed_tokens:,} tokens, "
                f"{self.schema_tokens:,} of them tool schemas) takes about "
                f"{self.seconds:.0f} s to process on this server "
                f"({self.tokens_per_second:.0f} prompt tokens/s) before the first word.")


def slow_prompt(fixed_tokens: int, schema_tokens: int, tokens_per_second: float | None, *,
                server: str | None = None, tool_count: int = 0,
                constrained: bool = False) -> SlowPrompt | None:
    """The warning when the fixed prefix takes over :data:`SLOW_PREFIX_SECONDS`, else None."""
    if not tokens_per_second or fixed_tokens / tokens_per_second <= SLOW_PREFIX_SECONDS:
        return None
    offers: list[tuple[str, str]] = []
    if server == "llama.cpp":
        offers.append(("prompt_cache", "llama.cpp's prompt cache is kept warm (cache_prompt, "
                                       "the same slot): from the second message on only the "
                                       "new part is processed, as long as this conversation "
                                       "is the only one on the server."))
    if tool_count > 1 and schema_tokens:
        offers.append(("fewer_tools", f"Offer fewer tools in this conversation: the "
                                      f"{tool_count} tools' schemas take {schema_tokens:,} "
                                      "tokens of every prompt."))
    if not constrained and schema_tokens and server in ("llama.cpp", "LM Studio", "Ollama",
                                                        "vLLM"):
        offers.append(("constrained_schemas", "Send the tools in their compact form: "
                                              "constrained tool calls describe each tool in "
                                              "one line instead of its full JSON schema."))
    return SlowPrompt(fixed_tokens, schema_tokens, tokens_per_second, tuple(offers))

"""How a model is run: context, threads, GPU layers, parallel slots and the chat template.

A person can edit each of these; a field left at None is chosen for the machine and
the model when the engine starts (see :meth:`RunSettings.resolve`). How much context
fits in memory is the model library's rule (``engine.fit``); it is passed in here as
a number, so this module decides nothing about memory itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from desktop_agent.engine.machine import default_threads

#: The context a model gets when nobody chose one: long enough for an agent's tool
#: rounds, small enough for the memory of an ordinary laptop.
DEFAULT_CONTEXT_LENGTH = 8192
#: The smallest context worth running an agent with (its instructions and tools alone
#: take a few hundred tokens).
MIN_CONTEXT_LENGTH = 512


@dataclass(frozen=True)
class RunSettings:
    """The settings one model runs with (None: chosen for the machine at start).

    Attributes:
        context_length: Tokens one conversation may use (each parallel slot gets this
            many), or None for :data:`DEFAULT_CONTEXT_LENGTH` capped by what the model
            was trained for and by what fits.
        threads: CPU threads, or None for the physical cores.
        parallel: Slots: conversations served at once.
        gpu_layers: Layers offloaded to a GPU, or None to let llama.cpp fit them.
        chat_template: A Jinja chat template, or None for the model's own when it can
            call tools and the project's tool template when it cannot.
        flash_attn: llama.cpp's flash attention: ``auto``, ``on`` or ``off``.
    """

    context_length: int | None = None
    threads: int | None = None
    parallel: int = 1
    gpu_layers: int | None = None
    chat_template: str | None = None
    flash_attn: str = "auto"

    def __post_init__(self) -> None:
        if self.context_length is not None and self.context_length < MIN_CONTEXT_LENGTH:
            raise ValueError(f"A context of {self.context_length} tokens is too short to run "
                             f"an agent; give at least {MIN_CONTEXT_LENGTH}.")
        if self.threads is not None and self.threads < 1:
            raise ValueError("The engine needs at least one thread.")
        if self.parallel < 1:
            raise ValueError("The engine needs at least one slot (parallel ≥ 1).")
        if self.flash_attn not in ("auto", "on", "off"):
            raise ValueError(f"flash_attn is auto, on or off, not {self.flash_attn!r}.")

    def resolve(self, *, trained_context: int | None = None,
                fits_context: int | None = None) -> RunSettings:
        """These settings with the context and threads chosen where they were left open.

        Args:
            trained_context: The context the model was trained for (its GGUF header).
            fits_context: The most context that fits in memory (the library's fit rule).
        """
        context = self.context_length
        if context is None:
            limits = [DEFAULT_CONTEXT_LENGTH, trained_context or DEFAULT_CONTEXT_LENGTH,
                      fits_context or DEFAULT_CONTEXT_LENGTH]
            context = max(MIN_CONTEXT_LENGTH, min(limits))
        return replace(self, context_length=context,
                       threads=self.threads if self.threads is not None else default_threads())

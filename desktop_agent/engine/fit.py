"""Whether a model fits this machine, and the settings to start it with.

llama.cpp maps the weights (about the file's size), allocates the key/value cache
for the whole context up front (f16: per token, layers x key/value heads x their
widths x 2 bytes) and compute buffers on top. A model that needs more than the
memory free now pushes the machine into swap or gets killed, so the library says
so before a person picks it, in a sentence with both figures.

The recommended context is the largest of a few usual sizes, up to what the model
was trained for, that still leaves headroom; the CPU build runs no layer on a GPU
and one thread per physical core.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from desktop_agent.engine.gguf_info import ModelInfo
from desktop_agent.engine.machine import MachineMemory, machine_memory, physical_cores

#: Contexts tried from the largest down; 2,048 tokens is the least worth running.
CONTEXT_STEPS = (32768, 16384, 8192, 4096, 2048)
#: The context offered when the system does not say how much memory is free.
UNKNOWN_MEMORY_CONTEXT = 8192
#: Compute buffers, the server process and the OS's share: a fixed part plus a
#: fraction of the weights (llama.cpp's CPU compute buffer grows with the model).
FIXED_OVERHEAD_BYTES = 300 * 1024 * 1024
WEIGHTS_OVERHEAD_FRACTION = 0.10
#: Above this share of the free memory the fit is tight: other programs still need some.
COMFORTABLE_SHARE = 0.8


class FitVerdict(enum.Enum):
    FITS = "fits"
    TIGHT = "tight"
    TOO_BIG = "too_big"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class FitEstimate:
    """How a model would sit in this machine's memory at a context.

    Attributes:
        verdict: Fits comfortably, tight (over 80 % of free memory), too big, or
            unknown (the system does not say how much is free).
        needed_bytes: Weights + key/value cache + overhead at ``context``.
        available_bytes: Memory free when estimated.
        context: The recommended context (tokens): the largest step that fits.
        threads: Threads to generate with (physical cores).
        gpu_layers: Layers to offload (0: the bundled llama.cpp is a CPU build).
        sentence: What to tell a person, e.g. "Needs 5.1 GB at 8,192 tokens; 3.2 GB free."
    """

    verdict: FitVerdict
    needed_bytes: int
    available_bytes: int | None
    context: int
    threads: int
    gpu_layers: int
    sentence: str


def needed_bytes(info: ModelInfo, context: int) -> int:
    """Memory to run ``info`` with ``context`` tokens of key/value cache."""
    return memory_needed(info.size_bytes, info.kv_bytes_per_token or 0, context)


def memory_needed(file_bytes: int, kv_bytes_per_token: int, context: int) -> int:
    """Memory for a file of ``file_bytes`` at ``context`` (also for one not downloaded yet)."""
    weights = int(file_bytes * (1 + WEIGHTS_OVERHEAD_FRACTION))
    return weights + kv_bytes_per_token * context + FIXED_OVERHEAD_BYTES


def estimate_fit(info: ModelInfo, *, context: int | None = None,
                 memory: MachineMemory | None = None, cores: int | None = None) -> FitEstimate:
    """Judge ``info`` against this machine (or the ``memory`` given, for tests and previews).

    Args:
        info: The model.
        context: A context the person chose; None picks the largest step that fits.
        memory: The machine's memory; None reads it now.
        cores: Physical cores; None reads them now.
    """
    memory = memory if memory is not None else machine_memory()
    chosen = context if context is not None else _recommended_context(info,
                                                                       memory.available_bytes)
    return fit_of(needed_bytes(info, chosen), chosen, memory=memory, cores=cores)


def fit_of(needed: int, context: int, *, memory: MachineMemory | None = None,
           cores: int | None = None) -> FitEstimate:
    """Judge ``needed`` bytes at ``context`` against this machine (a model not on disk too)."""
    memory = memory if memory is not None else machine_memory()
    threads = cores if cores is not None else physical_cores()
    verdict = _verdict(needed, memory.available_bytes)
    return FitEstimate(verdict=verdict, needed_bytes=needed, available_bytes=memory.available_bytes,
                       context=context, threads=threads, gpu_layers=0,
                       sentence=_sentence(verdict, needed, context, memory))


def _recommended_context(info: ModelInfo, budget: int | None) -> int:
    trained = info.context_length or CONTEXT_STEPS[-1]
    steps = [step for step in CONTEXT_STEPS if step <= trained] or [trained]
    if budget is None:  # no figure to size by: a modest context most machines can hold
        return next((step for step in steps if step <= UNKNOWN_MEMORY_CONTEXT), steps[-1])
    for step in steps:
        if needed_bytes(info, step) <= budget * COMFORTABLE_SHARE:
            return step
    return steps[-1]


def _verdict(needed: int, budget: int | None) -> FitVerdict:
    if budget is None:
        return FitVerdict.UNKNOWN
    if needed <= budget * COMFORTABLE_SHARE:
        return FitVerdict.FITS
    return FitVerdict.TIGHT if needed <= budget else FitVerdict.TOO_BIG


def _sentence(verdict: FitVerdict, needed: int, context: int, memory: MachineMemory) -> str:
    need = f"Needs {gigabytes(needed)} at {context:,} tokens of context"
    if verdict is FitVerdict.UNKNOWN:
        total = (f"; this machine has {gigabytes(memory.total_bytes)} in all"
                 if memory.total_bytes else "")
        return f"{need}{total} (free memory unknown)."
    free = f"{gigabytes(memory.available_bytes or 0)} free"
    if verdict is FitVerdict.TOO_BIG:
        return f"Too big for this machine now: {need[0].lower()}{need[1:]}, {free}."
    if verdict is FitVerdict.TIGHT:
        return f"{need}, {free}: close other programs first."
    return f"{need}, {free}."


def gigabytes(size: int | None) -> str:
    """``5.1 GB`` (decimal, as file managers and model pages show sizes)."""
    if size is None:
        return "unknown"
    if size < 1_000_000:
        return f"{size / 1000:.0f} kB"
    if size < 1_000_000_000:
        return f"{size / 1_000_000:.0f} MB"
    return f"{size / 1_000_000_000:.1f} GB"

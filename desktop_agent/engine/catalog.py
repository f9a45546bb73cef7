"""A short list of small models that call tools well, and the best one for this machine.

Someone with no model yet needs one suggestion, not the hub's million repositories.
Each entry names a real Hugging Face repository and its Q4_K_M file (the usual
balance of size and quality), with the file's size as published and the header
facts the memory estimate needs before the file is here (layers x key/value heads
x head width, from the model's own configuration).

The best pick is the most preferred entry that (a) fits comfortably in the memory
free now at an 8,192-token context and (b) is small enough to generate at a usable
speed on this many cores (about 2.5B parameters per physical core on a CPU build).
Entries whose own template offers tools come first; Gemma 3's does not (it calls
tools only when served with a tool template, as the app serves SmolLM2).
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop_agent.engine.fit import COMFORTABLE_SHARE, memory_needed
from desktop_agent.engine.machine import MachineMemory, machine_memory, physical_cores

#: The context a suggested model should hold comfortably.
PICK_CONTEXT = 8192
#: Parameters a CPU core can drive at a conversational speed (Q4_K_M, llama.cpp).
PARAMETERS_PER_CORE = 2_500_000_000


@dataclass(frozen=True)
class CatalogModel:
    """One suggested download.

    Attributes:
        title: What a person reads (``Qwen3 1.7B``).
        repo_id: The Hugging Face repository.
        filename: The Q4_K_M file in it.
        size_bytes: The file's size as the repository lists it.
        parameters: Parameter count (for the speed rule).
        context_length: The context it was trained for.
        kv_bytes_per_token: f16 key/value cache per token (its layers x KV heads x
            (key + value width) x 2 bytes).
        template_offers_tools: Whether its own chat template offers tools.
        note: One line on what it is good at.
    """

    title: str
    repo_id: str
    filename: str
    size_bytes: int
    parameters: int
    context_length: int
    kv_bytes_per_token: int
    template_offers_tools: bool
    note: str

    @property
    def id(self) -> str:
        """A short name for scripts and the command line (``qwen3-1.7b``)."""
        return "-".join(self.title.lower().split())

    @property
    def source(self) -> str:
        """``repo_id/filename``, as ``desktop-agent models pull`` takes it."""
        return f"{self.repo_id}/{self.filename}"

    def memory_needed(self, context: int = PICK_CONTEXT) -> int:
        """Memory to run it at ``context``, estimated as for a file on disk."""
        return memory_needed(self.size_bytes, self.kv_bytes_per_token, context)


def _kv(layers: int, kv_heads: int, head_width: int) -> int:
    return layers * kv_heads * 2 * head_width * 2


#: Most preferred first.
CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel("Qwen3 4B", "Qwen/Qwen3-4B-GGUF", "Qwen3-4B-Q4_K_M.gguf",
                 2_500_000_000, 4_020_000_000, 40960, _kv(36, 8, 128), True,
                 "The strongest small tool caller here; thinks before it answers."),
    CatalogModel("Qwen2.5 Coder 7B Instruct", "lmstudio-community/Qwen2.5-Coder-7B-Instruct-GGUF",
                 "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf", 4_680_000_000, 7_620_000_000, 32768,
                 _kv(28, 4, 128), True, "Code and file edits; needs 8 GB free and a fast CPU."),
    CatalogModel("Llama 3.2 3B Instruct", "bartowski/Llama-3.2-3B-Instruct-GGUF",
                 "Llama-3.2-3B-Instruct-Q4_K_M.gguf", 2_020_000_000, 3_210_000_000, 131072,
                 _kv(28, 8, 128), True, "A general assistant with a long context."),
    CatalogModel("Qwen3 1.7B", "unsloth/Qwen3-1.7B-GGUF", "Qwen3-1.7B-Q4_K_M.gguf",
                 1_110_000_000, 2_030_000_000, 40960, _kv(28, 8, 128), True,
                 "Calls tools reliably on modest machines."),
    CatalogModel("Qwen2.5 Coder 1.5B Instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
                 "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_120_000_000, 1_540_000_000, 32768,
                 _kv(28, 2, 128), True, "Small and quick for code questions."),
    CatalogModel("Qwen3 0.6B", "unsloth/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q4_K_M.gguf",
                 397_000_000, 596_000_000, 40960, _kv(28, 8, 128), True,
                 "The smallest that still calls tools; for old or busy machines."),
    CatalogModel("Gemma 3 4B Instruct", "ggml-org/gemma-3-4b-it-GGUF",
                 "gemma-3-4b-it-Q4_K_M.gguf", 2_490_000_000, 3_880_000_000, 131072,
                 _kv(34, 4, 256), False, "Good writing; calls tools only with a tool template."),
    CatalogModel("Gemma 3 1B Instruct", "unsloth/gemma-3-1b-it-GGUF",
                 "gemma-3-1b-it-Q4_K_M.gguf", 806_000_000, 1_000_000_000, 32768,
                 _kv(26, 1, 256), False, "Tiny and quick; calls tools only with a tool template."),
)


def best_pick(memory: MachineMemory | None = None, cores: int | None = None,
              catalog: tuple[CatalogModel, ...] = CATALOG) -> CatalogModel | None:
    """The most preferred entry that fits in memory and runs at a usable speed here.

    None when nothing fits (or the system does not say how much memory is free).
    """
    memory = memory if memory is not None else machine_memory()
    cores = cores if cores is not None else physical_cores()
    if memory.available_bytes is None:
        return None
    budget = memory.available_bytes * COMFORTABLE_SHARE
    usable = [model for model in catalog
              if model.memory_needed() <= budget
              and model.parameters <= cores * PARAMETERS_PER_CORE]
    usable.sort(key=lambda model: not model.template_offers_tools)  # stable: keeps preference
    return usable[0] if usable else None

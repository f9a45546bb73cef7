"""The context window a server applies to a model, read from each server's own JSON.

A model's *trained* length (GGUF ``context_length``, LM Studio's
``max_context_length``) is not what a request gets. Each server runs the
model with a window of its own, and a prompt over it is refused (llama.cpp,
LM Studio) or, worse, cut from the front without an error (Ollama's
OpenAI-compatible route). So a conversation is sized by the *applied* window,
and the settings page says where that figure came from:

* Ollama: ``/api/ps`` ``context_length`` of a loaded model (``api/types.go``
  ``ProcessModelResponse``); else ``PARAMETER num_ctx`` of the model's
  Modelfile (``/api/show`` ``parameters``); else Ollama's default, which
  depends on its version (``/api/version``): 2048 before 0.6.7, 4096 from
  0.6.7, and from 0.15.5 chosen by VRAM (4k under 24 GiB, 32k to 48 GiB, 256k
  above; ``docs/context-length.mdx``), always unless ``OLLAMA_CONTEXT_LENGTH``
  says otherwise, which no endpoint reports. The smallest figure is assumed
  and the source says so.
* LM Studio: ``loaded_context_length`` of a loaded model (``/api/v0/models``),
  or ``loaded_instances[].config.context_length`` (``/api/v1/models``);
  ``max_context_length`` is only the trained length. A model not loaded yet
  is loaded on first use with its default load settings (4096 unless changed).
* llama.cpp: ``/props`` ``default_generation_settings.n_ctx``, already the
  per-slot window (``--ctx-size`` / ``--parallel``); ``/v1/models``
  ``meta.n_ctx_train`` is the trained length.
* vLLM: ``max_model_len`` in ``/v1/models`` (``--max-model-len``).
* LiteLLM: ``max_input_tokens`` from ``/v1/model/info``.

Every reader here is a pure function of the JSON a server answered, so
discovery (:mod:`.model_details`) and the per-model question before a turn
(:mod:`.applied_context`) read it the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

OLLAMA = "Ollama"
LM_STUDIO = "LM Studio"
LLAMA_CPP = "llama.cpp"
VLLM = "vLLM"
LITELLM = "LiteLLM"

#: The window LM Studio loads a model with when nobody changed its load settings.
LMSTUDIO_DEFAULT_CONTEXT = 4096
#: What a prompt cut without an error is said to come from.
SOURCE_CUT = "learned from a cut prompt"
SOURCE_REFUSED = "learned from the server refusing a longer prompt"

_NUM_CTX_LINE = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """The window one model's requests get on one server, and where the figure came from.

    Attributes:
        applied: Tokens per request (prompt and reply) the server runs the
            model with; None when nothing says.
        trained: Tokens the model was trained for, where the server tells; None otherwise.
        source: Where ``applied`` came from, in words for Conversation settings
            (``Ollama /api/ps (loaded)``, ``LM Studio loaded_context_length``...).
        server: Which server said it (``Ollama``, ``LM Studio``, ``llama.cpp``,
            ``vLLM``, ``LiteLLM``); None when none of them answered.
        assumed: True when ``applied`` is a default the server is believed to
            use, not a figure it reported.
        slots: Requests the server runs at once, sharing its whole context
            (llama.cpp's ``--parallel``): ``applied`` is one slot's share.
    """

    applied: int | None = None
    trained: int | None = None
    source: str = "unknown: the server does not say"
    server: str | None = None
    assumed: bool = False
    slots: int = 1

    @property
    def smaller_than_trained(self) -> bool:
        """Whether the server runs the model with less than it was trained for."""
        return self.applied is not None and self.trained is not None \
            and self.applied < self.trained

    def learned(self, tokens: int, source: str) -> ContextWindow:
        """This window narrowed to ``tokens`` a server showed it applies (a cut, a refusal)."""
        if self.applied is not None and self.applied <= tokens and not self.assumed:
            return self
        return replace(self, applied=tokens, source=f"{source}: {tokens:,} tokens",
                       assumed=False)


def positive_int(value: Any) -> int | None:
    """``value`` when it is a positive integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


# -- Ollama ------------------------------------------------------------------------------
def ollama_name(model: str) -> str:
    """Ollama's full name of a model: ``llama3.2`` is ``llama3.2:latest``."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def ollama_loaded_context(ps: Any, model: str) -> int | None:
    """The window a loaded model runs with, from ``/api/ps`` (None: not loaded)."""
    wanted = ollama_name(model)
    for entry in ps.get("models", []) if isinstance(ps, dict) else []:
        if isinstance(entry, dict) and wanted in (
                ollama_name(str(entry.get("name") or "")),
                ollama_name(str(entry.get("model") or ""))):
            return positive_int(entry.get("context_length"))
    return None


def ollama_trained_context(show: Any) -> int | None:
    """``<architecture>.context_length`` from ``/api/show`` ``model_info``."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    return next((positive_int(v) for k, v in info.items()
                 if isinstance(k, str) and k.endswith(".context_length")), None)


def ollama_modelfile_context(show: Any) -> int | None:
    """``num_ctx`` from the Modelfile's parameters (``/api/show`` ``parameters`` text)."""
    parameters = show.get("parameters") if isinstance(show, dict) else None
    if not isinstance(parameters, str):
        return None
    match = _NUM_CTX_LINE.search(parameters)
    return int(match.group(1)) if match else None


def ollama_default_context(version: str | None) -> tuple[int, str]:
    """The window Ollama gives a model nothing else sizes, and the source sentence."""
    parsed = _version(version)
    if parsed is not None and parsed < (0, 6, 7):
        return 2048, f"Ollama {version} default 2048, OLLAMA_CONTEXT_LENGTH unknown"
    if parsed is not None and parsed < (0, 15, 5):
        return 4096, f"Ollama {version} default 4096, OLLAMA_CONTEXT_LENGTH unknown"
    which = f"Ollama {version}" if version else "Ollama"
    return 4096, (f"{which} default, 4096 assumed: it picks 4k, 32k or 256k by VRAM "
                  "unless OLLAMA_CONTEXT_LENGTH is set, and says which once the model "
                  "is loaded")


def ollama_window(model: str, show: Any, ps: Any, version: Any) -> ContextWindow:
    """The window Ollama applies to ``model``, from ``/api/show``, ``/api/ps``, ``/api/version``."""
    trained = ollama_trained_context(show)
    loaded = ollama_loaded_context(ps, model)
    if loaded is not None:
        return ContextWindow(loaded, trained, "Ollama /api/ps (loaded)", OLLAMA)
    modelfile = ollama_modelfile_context(show)
    if modelfile is not None:
        return ContextWindow(modelfile, trained, "Ollama Modelfile num_ctx", OLLAMA)
    text = version.get("version") if isinstance(version, dict) else None
    default, source = ollama_default_context(text if isinstance(text, str) else None)
    return ContextWindow(default, trained, source, OLLAMA, assumed=True)


def _version(text: str | None) -> tuple[int, ...] | None:
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(part) for part in match.groups()) if match else None


# -- LM Studio ---------------------------------------------------------------------------
def lmstudio_window(entry: dict[str, Any]) -> ContextWindow:
    """The window of one ``/api/v0/models`` (or ``/api/v1/models``) entry."""
    trained = positive_int(entry.get("max_context_length"))
    loaded = positive_int(entry.get("loaded_context_length"))
    if loaded is not None:
        return ContextWindow(loaded, trained, "LM Studio loaded_context_length", LM_STUDIO)
    instances = entry.get("loaded_instances")
    for instance in instances if isinstance(instances, list) else []:
        config = instance.get("config") if isinstance(instance, dict) else None
        length = positive_int(config.get("context_length")) if isinstance(config, dict) \
            else None
        if length is not None:
            return ContextWindow(length, trained, "LM Studio loaded instance context_length",
                                 LM_STUDIO)
    return ContextWindow(
        LMSTUDIO_DEFAULT_CONTEXT, trained,
        f"LM Studio, not loaded yet: {LMSTUDIO_DEFAULT_CONTEXT} assumed, the context length "
        "its load settings give by default", LM_STUDIO, assumed=True)


# -- llama.cpp, vLLM, LiteLLM --------------------------------------------------------------
def llamacpp_window(props: dict[str, Any], model_entry: Any = None) -> ContextWindow | None:
    """The per-slot window from ``/props``; the trained length from ``/v1/models`` ``meta``."""
    settings = props.get("default_generation_settings")
    n_ctx = positive_int(settings.get("n_ctx") if isinstance(settings, dict) else None) \
        or positive_int(props.get("n_ctx"))
    if n_ctx is None:
        return None
    meta = model_entry.get("meta") if isinstance(model_entry, dict) else None
    trained = positive_int(meta.get("n_ctx_train")) if isinstance(meta, dict) else None
    slots = positive_int(props.get("total_slots"))
    source = "llama.cpp /props n_ctx" if not slots or slots == 1 else \
        f"llama.cpp /props n_ctx per slot, --ctx-size / --parallel {slots}"
    return ContextWindow(n_ctx, trained, source, LLAMA_CPP, slots=slots or 1)


def listed_window(entry: dict[str, Any]) -> ContextWindow | None:
    """The window a ``/v1/models`` entry itself names (vLLM's, or a generic ``context_length``)."""
    found = vllm_window(entry) or litellm_window(entry)
    if found is not None:
        return found
    length = positive_int(entry.get("context_length"))
    return None if length is None else ContextWindow(
        length, None, "the server's /v1/models context_length")


def vllm_window(entry: dict[str, Any]) -> ContextWindow | None:
    """``max_model_len`` of a vLLM ``/v1/models`` entry."""
    length = positive_int(entry.get("max_model_len"))
    return None if length is None else ContextWindow(length, None, "vLLM max_model_len", VLLM)


def litellm_window(info: dict[str, Any]) -> ContextWindow | None:
    """``max_input_tokens`` of a LiteLLM ``/v1/model/info`` ``model_info``."""
    length = positive_int(info.get("max_input_tokens"))
    return None if length is None else ContextWindow(
        length, None, "LiteLLM max_input_tokens", LITELLM)

"""What a model is, from its GGUF header: never from its file name.

A model is one file, or the parts of a split model (``name-00001-of-00003.gguf``):
metadata comes from the first part, size and parameters from all of them. The
fields are the ones a person chooses a model by (name, size, quantisation, trained
context, whether it can call tools) and the ones the memory estimate needs (layers,
key/value heads and their widths).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from gguf import LlamaFileType

from desktop_agent.engine.chat_template import template_supports_tools
from desktop_agent.engine.errors import MissingSplitPartError
from desktop_agent.engine.gguf_header import GgufHeader, MetadataValue, read_header

PathT = TypeVar("PathT", bound=PurePath)

_SPLIT_NAME = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$",
                         re.IGNORECASE)
#: Bytes per cached key or value element: llama.cpp's default cache type is f16.
KV_ELEMENT_BYTES = 2


@dataclass(frozen=True)
class ModelInfo:
    """One model's header facts.

    Attributes:
        parts: The file, or every part of a split model in order.
        size_bytes: Bytes on disk over all parts.
        architecture: ``general.architecture`` (``llama``, ``qwen3``, ``gemma3``...).
        model_type: ``general.type``: ``model``, or ``adapter`` / ``imatrix`` / ``mmproj``
            for the GGUF files that sit next to models but cannot chat.
        name: ``general.name``, when the file has one.
        size_label: ``general.size_label`` (``1.7B``), or one made from the parameters.
        parameter_count: Elements over every tensor of every part.
        quantization: ``Q4_K_M``, ``Q8_0``, ``F16``... (the file type, or the tensor
            type holding most bytes when the file does not say).
        context_length: The context the model was trained for, if the header says.
        layer_count: Transformer blocks.
        embedding_length: Width of the hidden state.
        head_count: Attention heads.
        head_count_kv: Key/value heads (fewer than ``head_count`` with grouped queries).
        kv_bytes_per_token: Cache bytes one token of context costs (f16), if known.
        chat_template: ``tokenizer.chat_template``, if any.
        tool_template: A template the file names ``tool_use``, if any.
        supports_tools: Whether a template offers the model tools (``tools``,
            ``tool_calls``): a model whose template does not will not call them.
    """

    parts: tuple[Path, ...]
    size_bytes: int
    architecture: str
    model_type: str
    name: str | None
    size_label: str | None
    parameter_count: int
    quantization: str | None
    context_length: int | None
    layer_count: int | None
    embedding_length: int | None
    head_count: int | None
    head_count_kv: int | None
    kv_bytes_per_token: int | None
    chat_template: str | None
    tool_template: str | None
    supports_tools: bool

    @property
    def is_language_model(self) -> bool:
        """False for LoRA adapters, importance matrices and vision projectors (``clip``)."""
        return self.model_type == "model" and self.architecture != "clip"

    @property
    def path(self) -> Path:
        """The file to hand llama.cpp (the first part of a split model)."""
        return self.parts[0]

    def kv_cache_bytes(self, context: int) -> int | None:
        """Bytes the key/value cache takes for ``context`` tokens, if the header allows."""
        return None if self.kv_bytes_per_token is None else self.kv_bytes_per_token * context

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the library's cache stores it)."""
        data = asdict(self)
        data["parts"] = [str(part) for part in self.parts]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelInfo:
        """The inverse of :meth:`to_json`."""
        return cls(**{**data, "parts": tuple(Path(part) for part in data["parts"])})


def split_parts(path: PathT) -> tuple[PathT, ...] | None:
    """Every part's path when ``path`` is named like a split model's part, else None.

    Works on local paths and on the hub's file names (``PurePosixPath``) alike.
    """
    match = _SPLIT_NAME.match(path.name)
    if match is None:
        return None
    stem, count = match["stem"], int(match["count"])
    return tuple(path.with_name(f"{stem}-{index:05d}-of-{count:05d}.gguf")
                 for index in range(1, count + 1))


def is_later_split_part(path: Path) -> bool:
    """True for parts 2..n of a split model: the first part stands for all of them."""
    match = _SPLIT_NAME.match(path.name)
    return match is not None and int(match["index"]) > 1


def read_model_info(path: Path) -> ModelInfo:
    """Read the model at ``path`` (a single file or the first part of a split model).

    Raises:
        ModelFileError: The file or a part is missing, unreadable, not GGUF, of a
            GGUF this llama.cpp cannot read, truncated or damaged; the sentence names
            the file.
    """
    parts = split_parts(path)
    if parts is None:
        return _model_info((path,), [read_header(path)])
    missing = [part for part in parts if not part.is_file()]
    if missing:
        raise MissingSplitPartError(missing[0], (
            f"{path.name} is part of a split model, but {missing[0].name} is not next to it."))
    headers = [read_header(part) for part in parts]
    return _model_info(parts, headers)


def _model_info(parts: tuple[Path, ...], headers: list[GgufHeader]) -> ModelInfo:
    meta = headers[0].metadata
    arch = _text(meta.get("general.architecture")) or "unknown"
    parameters = sum(header.parameter_count for header in headers)
    chat_template = _text(meta.get("tokenizer.chat_template"))
    tool_template = _text(meta.get("tokenizer.chat_template.tool_use"))
    layers = _count(meta.get(f"{arch}.block_count"))
    heads = _count(meta.get(f"{arch}.attention.head_count"))
    kv_heads = _count(meta.get(f"{arch}.attention.head_count_kv")) or heads
    embedding = _count(meta.get(f"{arch}.embedding_length"))
    return ModelInfo(
        parts=parts,
        size_bytes=sum(part.stat().st_size for part in parts),
        architecture=arch,
        model_type=_text(meta.get("general.type")) or "model",
        name=_text(meta.get("general.name")),
        size_label=_text(meta.get("general.size_label")) or size_label(parameters),
        parameter_count=parameters,
        quantization=_quantization(meta.get("general.file_type"),
                                   headers[0].dominant_tensor_type),
        context_length=_count(meta.get(f"{arch}.context_length")),
        layer_count=layers,
        embedding_length=embedding,
        head_count=heads,
        head_count_kv=kv_heads,
        kv_bytes_per_token=_kv_bytes_per_token(meta, arch, layers, embedding, heads),
        chat_template=chat_template,
        tool_template=tool_template,
        supports_tools=any(template_supports_tools(t) for t in (chat_template, tool_template)),
    )


def size_label(parameters: int) -> str | None:
    """``1.7B``, ``135M``: how model pages write a parameter count."""
    if parameters <= 0:
        return None
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if parameters >= scale:
            value = parameters / scale
            return f"{value:.0f}{unit}" if value >= 10 else f"{value:.1f}".rstrip("0.") + unit
    return str(parameters)


def _quantization(file_type: MetadataValue | None, dominant: str | None) -> str | None:
    if isinstance(file_type, int) and not isinstance(file_type, bool):
        try:
            name = LlamaFileType(file_type).name
        except ValueError:
            name = ""
        if name and name != "GUESSED":
            return name.removeprefix("MOSTLY_").removeprefix("ALL_")
    return dominant


def _kv_bytes_per_token(meta: dict[str, MetadataValue], arch: str, layers: int | None,
                        embedding: int | None, heads: int | None) -> int | None:
    """Key and value bytes per token over all layers, at llama.cpp's default f16.

    Per-layer head counts (a tuple in the header) are summed layer by layer. Models
    with sliding-window layers need less than this: the estimate errs on the safe side.
    """
    raw_kv_heads = meta.get(f"{arch}.attention.head_count_kv", heads)
    if layers is None or raw_kv_heads is None:
        return None
    head_width = embedding // heads if embedding and heads else None
    key_width = _count(meta.get(f"{arch}.attention.key_length")) or head_width
    value_width = _count(meta.get(f"{arch}.attention.value_length")) or head_width
    if key_width is None or value_width is None:
        return None
    if isinstance(raw_kv_heads, tuple):
        kv_head_sum = sum(int(h) for h in raw_kv_heads[:layers])
    elif isinstance(raw_kv_heads, int):
        kv_head_sum = raw_kv_heads * layers
    else:
        return None
    return kv_head_sum * (key_width + value_width) * KV_ELEMENT_BYTES


def _text(value: MetadataValue | None) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: MetadataValue | None) -> int | None:
    """A positive integer from the header; the largest entry of a per-layer tuple."""
    if isinstance(value, tuple):
        numbers = [v for v in value if isinstance(v, int)]
        value = max(numbers) if numbers else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None

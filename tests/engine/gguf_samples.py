"""Small, valid GGUF files written by llama.cpp's own ``gguf.GGUFWriter``.

Shared by the engine tests and ``bench/engine_library.py`` (which puts this folder
on ``sys.path``). A file carries the header keys the engine reads and a few tiny
tensors, so it is a real GGUF a few kilobytes long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, LlamaFileType

#: A Qwen-style template that offers tools (reads ``tools``, writes ``tool_calls``).
TOOLS_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n' }}{%- for tool in tools %}"
    "{{- tool | tojson }}{%- endfor %}{%- endif %}"
    "{%- for message in messages %}{%- if message.tool_calls %}"
    "{%- for call in message.tool_calls %}{{- '<tool_call>' }}{%- endfor %}{%- endif %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
)
#: A template that only says "tool" in its literal text: it offers no tools.
PLAIN_TEMPLATE = (
    "You are a helpful tool for writing tools_and_tips.\n"
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>\\n' }}{% endfor %}"
)


@dataclass(frozen=True)
class SampleModel:
    """What to write into a sample GGUF."""

    arch: str = "llama"
    name: str | None = "Sample Model"
    size_label: str | None = "1.5B"
    file_type: int | None = LlamaFileType.MOSTLY_Q4_K_M
    context_length: int = 32768
    layers: int = 2
    embedding: int = 64
    heads: int = 4
    kv_heads: int | Sequence[int] = 2
    chat_template: str | None = TOOLS_TEMPLATE
    vocabulary: int = 32
    extra_strings: tuple[tuple[str, str], ...] = ()


def write_gguf(path: Path, model: SampleModel = SampleModel(), *,
               split_max_tensors: int = 0) -> Path:
    """Write ``model`` to ``path`` (split into parts when ``split_max_tensors`` > 0)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = GGUFWriter(path, model.arch, split_max_tensors=split_max_tensors)
    if model.name:
        writer.add_name(model.name)
    if model.size_label:
        writer.add_size_label(model.size_label)
    if model.file_type is not None:
        writer.add_file_type(int(model.file_type))
    writer.add_context_length(model.context_length)
    writer.add_block_count(model.layers)
    writer.add_embedding_length(model.embedding)
    writer.add_head_count(model.heads)
    writer.add_head_count_kv(model.kv_heads)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([f"tok{index}" for index in range(model.vocabulary)])
    if model.chat_template:
        writer.add_chat_template(model.chat_template)
    for key, value in model.extra_strings:
        writer.add_string(key, value)
    writer.add_tensor("token_embd.weight",
                      np.ones((model.vocabulary, model.embedding), dtype=np.float32))
    for layer in range(model.layers):
        writer.add_tensor(f"blk.{layer}.attn_q.weight",
                          np.ones((model.embedding, model.embedding), dtype=np.float16))
    writer.add_tensor("output_norm.weight", np.ones(model.embedding, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def parameter_count(model: SampleModel) -> int:
    """The elements :func:`write_gguf` writes for ``model``."""
    return (model.vocabulary * model.embedding + model.layers * model.embedding ** 2
            + model.embedding)

"""The engine's copy of GGUF's numbers equals llama.cpp's own ``gguf`` package, name for name.

The app reads headers without importing ``gguf`` (it would load numpy); this test
is what keeps the copy honest when a newer ``gguf`` adds a type.
"""

from __future__ import annotations

import gguf

from desktop_agent.engine import gguf_constants as ours


def members(enum_type: type) -> dict[str, int]:
    return {member.name: int(member.value) for member in enum_type}  # type: ignore[attr-defined]


def test_the_value_tensor_and_file_types_are_gguf_s() -> None:
    assert members(ours.ValueType) == members(gguf.GGUFValueType)
    assert members(ours.TensorType) == members(gguf.GGMLQuantizationType)
    assert members(ours.FileType) == members(gguf.LlamaFileType)


def test_the_block_sizes_magic_and_alignment_are_gguf_s() -> None:
    assert {t.name: sizes for t, sizes in ours.QUANT_SIZES.items()} == \
        {t.name: tuple(sizes) for t, sizes in gguf.GGML_QUANT_SIZES.items()}
    assert (ours.GGUF_MAGIC, ours.GGUF_DEFAULT_ALIGNMENT) == \
        (gguf.GGUF_MAGIC, gguf.GGUF_DEFAULT_ALIGNMENT)

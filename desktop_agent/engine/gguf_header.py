"""Walk a GGUF file's header (metadata and tensor table) without touching the weights.

The ``gguf`` package (llama.cpp's own) names the value types, the file types and
the tensor types, and this module reads by its definitions. Its ``GGUFReader`` is
not used for the walk: it builds a numpy view for every element of every array,
so the vocabulary alone (150,000 strings in a Qwen model) costs seconds per file,
and a library of fifty models would take minutes to list. Here long arrays are
stepped over by their lengths, and only scalars, strings and short arrays are kept.

The file is memory-mapped: the header's pages are read, the weights' never are.
A file that ends before its header or its tensor table says it should is reported
as incomplete (an unfinished download, most often), naming the file; the runner
refuses such a file before any process starts (``gguf_precheck``).
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gguf import GGML_QUANT_SIZES, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC
from gguf import GGMLQuantizationType as TensorType
from gguf import GGUFValueType as ValueType

from desktop_agent.engine.errors import (
    CorruptModelError,
    NotGgufError,
    TruncatedModelError,
    UnreadableModelError,
    UnsupportedGgufError,
)

#: A metadata value as kept: scalars, strings, and short arrays of them.
MetadataValue = str | int | float | bool | tuple[Any, ...]

_SCALARS: dict[ValueType, str] = {
    ValueType.UINT8: "B", ValueType.INT8: "b", ValueType.UINT16: "H", ValueType.INT16: "h",
    ValueType.UINT32: "I", ValueType.INT32: "i", ValueType.FLOAT32: "f", ValueType.BOOL: "?",
    ValueType.UINT64: "Q", ValueType.INT64: "q", ValueType.FLOAT64: "d",
}
#: Arrays longer than this (vocabularies, merges, scores) are skipped, not kept.
_KEPT_ARRAY_LENGTH = 4096
#: No real model has more: a larger count is garbage, not a big model.
_MAX_KEYS = 1 << 20
_MAX_TENSORS = 1 << 22
_MAX_ARRAY_LENGTH = 1 << 32
#: ggml's limit on a tensor's dimensions (``GGML_MAX_DIMS``).
_MAX_DIMS = 4
_SUPPORTED_VERSIONS = (2, 3)


@dataclass(frozen=True)
class GgufHeader:
    """What one GGUF file's header says.

    Attributes:
        version: The GGUF format version (2 or 3).
        metadata: The key/value section, minus arrays longer than a few thousand items.
        tensor_count: Tensors in this file (one part, for a split model).
        parameter_count: Elements over all tensors in this file.
        expected_size: The least byte length the tensor table implies (a tensor of
            a type newer than the installed tables counts one byte).
        dominant_tensor_type: The tensor type holding the most bytes (``Q4_K``...).
    """

    version: int
    metadata: dict[str, MetadataValue]
    tensor_count: int
    parameter_count: int
    expected_size: int
    dominant_tensor_type: str | None


class _Ended(Exception):
    """The walk ran past the end of the file."""


class _Invalid(Exception):
    """The header holds something GGUF does not allow; the message says what."""


class _Cursor:
    """Reads values one after another from the mapped file, checking every bound."""

    def __init__(self, buffer: mmap.mmap, endian: str) -> None:
        self.buffer = buffer
        self.endian = endian
        self.offset = 0

    def advance(self, length: int) -> int:
        start = self.offset
        if length < 0 or start + length > len(self.buffer):
            raise _Ended
        self.offset = start + length
        return start

    def scalar(self, code: str) -> Any:
        fmt = self.endian + code
        return struct.unpack_from(fmt, self.buffer, self.advance(struct.calcsize(fmt)))[0]

    def u32(self) -> int:
        return int(self.scalar("I"))

    def u64(self) -> int:
        return int(self.scalar("Q"))

    def string(self) -> str:
        length = self.u64()
        start = self.advance(length)
        try:
            return self.buffer[start:start + length].decode("utf-8")
        except UnicodeDecodeError as error:
            raise _Invalid(f"a string at byte {start} is not UTF-8") from error

    def skip_string(self) -> None:
        self.advance(self.u64())

    def skip_strings(self, count: int) -> None:
        """Step over ``count`` strings: the vocabulary's walk, so kept to one tight loop."""
        buffer, offset, end = self.buffer, self.offset, len(self.buffer)
        length_at = struct.Struct(self.endian + "Q").unpack_from
        for _ in range(count):
            if offset + 8 > end:
                raise _Ended
            offset += 8 + length_at(buffer, offset)[0]
        if offset > end:
            raise _Ended
        self.offset = offset

    def value_type(self) -> ValueType:
        raw = self.u32()
        try:
            return ValueType(raw)
        except ValueError:
            raise _Invalid(f"value type {raw} at byte {self.offset - 4} is unknown") from None

    def value(self, kind: ValueType) -> MetadataValue | None:
        """One value of ``kind``; None for an array too long to keep (skipped)."""
        if kind is ValueType.STRING:
            return self.string()
        if kind is ValueType.ARRAY:
            return self.array()
        return self.scalar(_SCALARS[kind])  # type: ignore[no-any-return]

    def array(self) -> tuple[Any, ...] | None:
        item_kind = self.value_type()
        count = self.u64()
        _plausible(count, _MAX_ARRAY_LENGTH, "array length")
        if item_kind in _SCALARS:
            size = struct.calcsize(self.endian + _SCALARS[item_kind])
            if count > _KEPT_ARRAY_LENGTH:
                self.advance(count * size)
                return None
            start = self.advance(count * size)
            return struct.unpack_from(f"{self.endian}{count}{_SCALARS[item_kind]}",
                                      self.buffer, start)
        if item_kind is ValueType.STRING and count > _KEPT_ARRAY_LENGTH:
            self.skip_strings(count)
            return None
        items = tuple(self.value(item_kind) for _ in range(count))
        return None if count > _KEPT_ARRAY_LENGTH else items


def read_header(path: Path) -> GgufHeader:
    """Read ``path``'s metadata and tensor table, and check that its weights are all there.

    Every tensor's bytes must lie inside the file: a download that stopped early is
    caught even when it stopped in the last tensor, before llama.cpp would fail deep
    in loading or die of SIGBUS touching a page past the end of the mapped file.

    Raises:
        UnreadableModelError: No file there, a folder, or not readable.
        NotGgufError: The file does not start with ``GGUF``.
        UnsupportedGgufError: GGUF version 1, an unknown version, or big-endian.
        TruncatedModelError: The file ends before its header or its weights do.
        CorruptModelError: The header holds a value GGUF does not allow.
    """
    try:
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size < 4:
                raise NotGgufError(path, _not_gguf(path, "it is empty" if size == 0 else ""))
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
                return _checked_walk(path, buffer, size)
    except FileNotFoundError:
        raise UnreadableModelError(path, f"There is no model file at {path}.") from None
    except IsADirectoryError:
        raise UnreadableModelError(path, f"{path} is a folder, not a model file.") from None
    except PermissionError:
        raise UnreadableModelError(path, f"The app may not read {path} (permission denied).") \
            from None
    except OSError as error:
        raise UnreadableModelError(path, f"{path} could not be read: {error.strerror or error}.") \
            from None


def _checked_walk(path: Path, buffer: mmap.mmap, size: int) -> GgufHeader:
    if struct.unpack_from("<I", buffer, 0)[0] != GGUF_MAGIC:
        raise NotGgufError(path, _not_gguf(path, ""))
    try:
        header = _walk(buffer, path)
    except _Ended:
        raise TruncatedModelError(path, (
            f"{path.name} is incomplete: its {size:,} bytes end inside its header (a download "
            "that stopped early?). Download it again.")) from None
    except _Invalid as error:
        raise CorruptModelError(path, f"{path.name} is damaged: {error}; download it again.") \
            from None
    if size < header.expected_size:
        raise TruncatedModelError(path, (
            f"{path.name} is incomplete: it has {size:,} of its {header.expected_size:,} bytes "
            "(an unfinished download?). Download it again."))
    return header


def _not_gguf(path: Path, why: str) -> str:
    reason = f" ({why})" if why else ""
    return f"{path.name} is not a GGUF model file{reason}."


def _walk(buffer: mmap.mmap, path: Path) -> GgufHeader:
    cursor = _Cursor(buffer, "<")
    cursor.advance(4)
    version = cursor.u32()
    if version not in _SUPPORTED_VERSIONS:
        raise UnsupportedGgufError(path, _unsupported_version(path, version))
    tensor_count, key_count = cursor.u64(), cursor.u64()
    _plausible(key_count, _MAX_KEYS, "key count")
    _plausible(tensor_count, _MAX_TENSORS, "tensor count")
    metadata: dict[str, MetadataValue] = {}
    for _ in range(key_count):
        key = cursor.string()
        value = cursor.value(cursor.value_type())
        if value is not None:
            metadata[key] = value
    return _walk_tensors(cursor, version, metadata, tensor_count)


def _plausible(count: int, limit: int, what: str) -> None:
    """No real model has more: a larger count is a damaged header, not a big model."""
    if count > limit:
        raise _Invalid(f"its {what} {count:,} is impossible")


def _unsupported_version(path: Path, version: int) -> str:
    if version == 1:
        return f"{path.name} is an old GGUF (version 1) that llama.cpp no longer reads."
    if int.from_bytes(version.to_bytes(4, "little"), "big") in _SUPPORTED_VERSIONS:
        return (f"{path.name} is a big-endian GGUF, made for another kind of computer; "
                "download the ordinary (little-endian) file.")
    return f"{path.name} uses GGUF version {version}, which this app does not know."


def _walk_tensors(cursor: _Cursor, version: int, metadata: dict[str, MetadataValue],
                  tensor_count: int) -> GgufHeader:
    parameters = 0
    data_end = 0
    bytes_by_type: dict[str, int] = {}
    for _ in range(tensor_count):
        cursor.skip_string()
        dims = cursor.u32()
        if not 0 < dims <= _MAX_DIMS:
            raise _Invalid(f"a tensor has {dims} dimensions")
        elements = math.prod(cursor.u64() for _ in range(dims))
        raw_type, offset = cursor.u32(), cursor.u64()
        parameters += elements
        try:
            tensor_type = TensorType(raw_type)
            block, type_size = GGML_QUANT_SIZES[tensor_type]
        except (ValueError, KeyError):
            # A type newer than the installed tables: at least its first byte is owed.
            data_end = max(data_end, offset + 1)
            continue
        if elements % block:
            raise _Invalid(f"a tensor's size does not fit its type {tensor_type.name}")
        length = elements * type_size // block
        data_end = max(data_end, offset + length)
        bytes_by_type[tensor_type.name] = bytes_by_type.get(tensor_type.name, 0) + length
    alignment = metadata.get("general.alignment", GGUF_DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise _Invalid(f"its alignment {alignment!r} is not a power of two")
    data_start = -(-cursor.offset // alignment) * alignment
    dominant = max(bytes_by_type, key=bytes_by_type.__getitem__) if bytes_by_type else None
    return GgufHeader(
        version=version, metadata=metadata, tensor_count=tensor_count,
        parameter_count=parameters, expected_size=data_start + data_end,
        dominant_tensor_type=dominant,
    )

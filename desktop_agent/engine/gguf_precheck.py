"""Refuse a bad model file before the engine starts: not GGUF, cut short or damaged.

llama.cpp given a truncated file can fail deep in loading, or crash with SIGBUS
when it touches a page past the end of the memory-mapped file; a person should
instead read one sentence naming the file. So before any process starts, this
walks the GGUF header (magic ``GGUF``, version, the key/value pairs, the tensor
table) and checks that every tensor's bytes lie inside the file: a download that
stopped early is caught even when it stopped in the last tensor.

The few header values the runner needs on the way (the architecture, the trained
context, the chat template) are kept; the model library's full header reader
(``engine.gguf_info``) can take this module's place later. The layout is GGUF's
specification (ggml's ``docs/gguf.md``); the block sizes are ggml's type traits.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

from desktop_agent.engine.engine_errors import ModelFileInvalid

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
#: ggml's limit on a tensor's dimensions (GGML_MAX_DIMS).
MAX_DIMS = 4

# Value types of GGUF's key/value pairs.
_STRING, _ARRAY = 8, 9
_FIXED_VALUE_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
                        7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

#: ggml type id -> (elements per block, bytes per block), as ggml's type traits give them.
GGML_BLOCK_SIZES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
    14: (256, 210), 15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98),
    19: (256, 50), 20: (32, 18), 21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1),
    25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2),
    34: (256, 54), 35: (256, 66), 39: (32, 17), 40: (64, 36), 41: (128, 18),
}

_KEPT_STRINGS = ("general.architecture", "general.name", "tokenizer.chat_template")


@dataclass(frozen=True)
class ModelFileFacts:
    """What the runner learns from a GGUF header that passed the check.

    Attributes:
        path: The file.
        size: Its size in bytes.
        version: The GGUF version.
        architecture: ``general.architecture`` (``llama``, ``qwen3``...), or None.
        name: ``general.name``, or None.
        chat_template: The model's own Jinja chat template, or None.
        trained_context: ``<architecture>.context_length``, or None.
        tensor_count: How many tensors the file holds.
    """

    path: Path
    size: int
    version: int
    architecture: str | None
    name: str | None
    chat_template: str | None
    trained_context: int | None
    tensor_count: int


class _Truncated(Exception):
    """The header runs past the end of the file."""


class _Damaged(Exception):
    """A header value no GGUF writer produces (the message says which)."""


def check_model_file(path: str | Path) -> ModelFileFacts:
    """Check that ``path`` is a whole GGUF file and return what its header says.

    Raises:
        ModelFileInvalid: Missing, unreadable, not GGUF, an unknown version, cut
            short, or damaged; the message names the file and says which.
    """
    file = Path(path)
    try:
        with file.open("rb") as handle:
            size = handle.seek(0, 2)
            if size < 24:
                handle.seek(0)
                if handle.read(4) == MAGIC:
                    raise ModelFileInvalid(file, _incomplete(file, size))
                raise ModelFileInvalid(file, _not_gguf(file))
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _read_header(file, data, size)
    except FileNotFoundError:
        raise ModelFileInvalid(file, f"There is no model file at {file}.") from None
    except IsADirectoryError:
        raise ModelFileInvalid(file, f"{file} is a folder, not a model file.") from None
    except PermissionError:
        raise ModelFileInvalid(file, f"The app may not read {file} (permission denied).") \
            from None
    except OSError as exc:
        raise ModelFileInvalid(file, f"{file} could not be read: {exc.strerror or exc}.") \
            from None


def _read_header(file: Path, data: mmap.mmap, size: int) -> ModelFileFacts:
    if data[:4] != MAGIC:
        raise ModelFileInvalid(file, _not_gguf(file))
    (version,) = struct.unpack_from("<I", data, 4)
    if version not in SUPPORTED_VERSIONS:
        raise ModelFileInvalid(file, _unsupported_version(file, version))
    reader = _HeaderReader(data, size)
    try:
        tensor_count, kv_count = reader.unpack("<Q"), reader.unpack("<Q")
        reader.plausible_count(tensor_count, 24, "tensor count")
        reader.plausible_count(kv_count, 12, "key count")
        kept = reader.read_pairs(kv_count)
        alignment = int(kept.get("general.alignment") or DEFAULT_ALIGNMENT)
        if alignment <= 0 or alignment & (alignment - 1):
            raise _Damaged(f"its alignment {alignment} is not a power of two")
        data_end = reader.tensor_data_end(tensor_count, alignment)
    except _Truncated:
        raise ModelFileInvalid(file, _incomplete(file, size)) from None
    except _Damaged as exc:
        raise ModelFileInvalid(file, f"{file.name} is damaged ({exc}); download it again.") \
            from None
    if data_end > size:
        raise ModelFileInvalid(
            file, f"{file.name} is incomplete: it holds {size:,} bytes of the {data_end:,} its "
                  "model needs (a download that stopped early?). Download it again.")
    architecture = _text(kept.get("general.architecture"))
    trained = kept.get(f"{architecture}.context_length") if architecture else None
    return ModelFileFacts(
        path=file, size=size, version=version, architecture=architecture,
        name=_text(kept.get("general.name")),
        chat_template=_text(kept.get("tokenizer.chat_template")),
        trained_context=trained if isinstance(trained, int) and trained > 0 else None,
        tensor_count=tensor_count)


class _HeaderReader:
    """A cursor over the memory-mapped header that refuses to read past the file's end."""

    def __init__(self, data: mmap.mmap, size: int) -> None:
        self._data = data
        self._size = size
        self.position = 8

    def unpack(self, layout: str) -> int:
        width = struct.calcsize(layout)
        if self.position + width > self._size:
            raise _Truncated
        (value,) = struct.unpack_from(layout, self._data, self.position)
        self.position += width
        return int(value)

    def plausible_count(self, count: int, smallest_entry: int, what: str) -> None:
        if count * smallest_entry > self._size - self.position:
            if count > self._size:  # no file this size could hold that many: not a cut-off
                raise _Damaged(f"its {what} {count:,} is impossible")
            raise _Truncated

    def skip_string(self) -> None:
        length = self.unpack("<Q")
        if self.position + length > self._size:
            raise _Truncated
        self.position += length

    def string(self) -> bytes:
        start = self.position + 8
        self.skip_string()
        return bytes(self._data[start:self.position])

    def read_pairs(self, count: int) -> dict[str, str | int | float | None]:
        """Walk ``count`` key/value pairs, keeping the values the runner needs."""
        kept: dict[str, str | int | float | None] = {}
        for _ in range(count):
            key = self.string().decode("utf-8", "replace")
            value_type = self.unpack("<I")
            wanted = key in _KEPT_STRINGS or key.endswith(".context_length") \
                or key == "general.alignment"
            if wanted and value_type == _STRING:
                kept[key] = self.string().decode("utf-8", "replace")
            elif wanted and value_type in _FIXED_VALUE_FORMATS:
                kept[key] = self.unpack(_FIXED_VALUE_FORMATS[value_type])
            else:
                self.skip_value(value_type)
        return kept

    def skip_value(self, value_type: int) -> None:
        if value_type == _STRING:
            self.skip_string()
        elif value_type == _ARRAY:
            item_type, length = self.unpack("<I"), self.unpack("<Q")
            if item_type == _STRING:
                self.plausible_count(length, 8, "array length")
                for _ in range(length):
                    self.skip_string()
            elif item_type in _FIXED_VALUE_FORMATS:
                width = struct.calcsize(_FIXED_VALUE_FORMATS[item_type])
                self.plausible_count(length, width, "array length")
                self.position += length * width
            else:
                raise _Damaged(f"an array holds values of unknown type {item_type}")
        elif value_type in _FIXED_VALUE_FORMATS:
            self.position += struct.calcsize(_FIXED_VALUE_FORMATS[value_type])
        else:
            raise _Damaged(f"a value has unknown type {value_type}")
        if self.position > self._size:
            raise _Truncated

    def tensor_data_end(self, count: int, alignment: int) -> int:
        """Where the last tensor's bytes end, counted from the file's start."""
        furthest = 0
        for _ in range(count):
            self.skip_string()
            dimensions = self.unpack("<I")
            if not 0 < dimensions <= MAX_DIMS:
                raise _Damaged(f"a tensor has {dimensions} dimensions")
            elements = 1
            for _ in range(dimensions):
                elements *= self.unpack("<Q")
            type_id, offset = self.unpack("<I"), self.unpack("<Q")
            block, block_bytes = GGML_BLOCK_SIZES.get(type_id, (1, 0))
            if block_bytes and elements % block:
                raise _Damaged(f"a tensor's size does not fit its type {type_id}")
            # A type newer than this table: at least its first byte must be in the file.
            length = elements // block * block_bytes if block_bytes else 1
            furthest = max(furthest, offset + length)
        start = -(-self.position // alignment) * alignment
        return start + furthest


def _text(value: str | int | float | None) -> str | None:
    return value if isinstance(value, str) and value else None


def _not_gguf(file: Path) -> str:
    return (f"{file.name} is not a GGUF model file (it does not start with “GGUF”); "
            "the engine runs GGUF files only.")


def _incomplete(file: Path, size: int) -> str:
    return (f"{file.name} is incomplete: its {size:,} bytes end inside its header (a download "
            "that stopped early?). Download it again.")


def _unsupported_version(file: Path, version: int) -> str:
    if version == 1:
        return f"{file.name} is an old GGUF (version 1) that llama.cpp no longer reads."
    if struct.unpack("<I", struct.pack(">I", version))[0] in SUPPORTED_VERSIONS:
        return (f"{file.name} is a big-endian GGUF, made for another kind of computer; "
                "download the ordinary (little-endian) file.")
    return f"{file.name} uses GGUF version {version}, which this app does not know."

"""The engine's exception hierarchy: one type per thing a person can act on.

Front ends map the type to an action (pick another file, add a token, free disk
space, retry) and show ``str(error)``, a sentence that names the file or model::

    EngineError
    ├── ModelFileError                   a GGUF file cannot be used (``path``)
    │   ├── NotGgufError                 not a GGUF file at all
    │   ├── TruncatedModelError          the file ends before its header says it does
    │   ├── CorruptModelError            the header is not what GGUF allows
    │   └── MissingSplitPartError        a part of a split model is not on disk
    └── DownloadError                    getting a model from the hub failed (``repo_id``)
        ├── GatedModelError              the repository needs a token with granted access
        ├── HubEntryNotFoundError        no such repository, revision or file
        ├── DownloadInterruptedError     the network went away; the partial file is kept
        ├── DiskFullError                not enough free space; the partial file is kept
        ├── ChecksumMismatchError        the bytes are not the published ones; deleted
        └── DownloadCancelledError       the caller cancelled; the partial file is kept

Messages never contain the access token.
"""

from __future__ import annotations

from pathlib import Path


class EngineError(Exception):
    """Base class of every error the engine raises."""


class ModelFileError(EngineError):
    """A model file on disk cannot be used.

    Attributes:
        path: The file the sentence is about.
    """

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


class NotGgufError(ModelFileError):
    """The file does not start with GGUF's magic bytes."""


class TruncatedModelError(ModelFileError):
    """The file is shorter than its own header says: most often an unfinished download."""


class CorruptModelError(ModelFileError):
    """The header holds values GGUF does not allow (an unknown type, a bad string)."""


class MissingSplitPartError(ModelFileError):
    """One part of a ``-0000k-of-0000n.gguf`` model is missing next to the others."""


class DownloadError(EngineError):
    """A download from the hub failed.

    Attributes:
        repo_id: The hub repository, e.g. ``Qwen/Qwen3-1.7B-GGUF``.
        filename: The file inside it.
    """

    def __init__(self, repo_id: str, filename: str, message: str) -> None:
        super().__init__(message)
        self.repo_id = repo_id
        self.filename = filename


class GatedModelError(DownloadError):
    """The repository is gated or private: a token with granted access is needed."""


class HubEntryNotFoundError(DownloadError):
    """The repository, revision or file does not exist (or is hidden from this token)."""


class DownloadInterruptedError(DownloadError):
    """The connection failed and did not come back; downloading again resumes.

    Attributes:
        bytes_kept: How much of the file is on disk, ready to resume from.
    """

    def __init__(self, repo_id: str, filename: str, message: str, bytes_kept: int) -> None:
        super().__init__(repo_id, filename, message)
        self.bytes_kept = bytes_kept


class DiskFullError(DownloadError):
    """The disk has no room for the rest of the file."""


class ChecksumMismatchError(DownloadError):
    """The downloaded bytes do not hash to the hub's published checksum; they were deleted."""


class DownloadCancelledError(DownloadError):
    """The caller cancelled; what was downloaded is kept for the next try."""

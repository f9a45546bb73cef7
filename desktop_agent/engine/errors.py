"""The engine's errors: one type per thing a person can act on, each with a sentence.

Front ends map the type to an action (pick another file, add a token, free disk
space, Restart, another port) without parsing strings, and show ``str(error)``, a
sentence that names the file or model::

    EngineError                          the engine could not do what was asked
    ├── ModelFileError                   a GGUF file cannot be used (``path``); refused
    │   │                                before any process starts
    │   ├── UnreadableModelError         missing, a folder, or not readable
    │   ├── NotGgufError                 not a GGUF file at all
    │   ├── UnsupportedGgufError         a GGUF version or byte order llama.cpp cannot read
    │   ├── TruncatedModelError          the file ends before its header or weights do
    │   ├── CorruptModelError            the header is not what GGUF allows
    │   └── MissingSplitPartError        a part of a split model is not on disk
    ├── EngineNotInstalled               llama.cpp's server (xllamacpp) is missing
    ├── UnknownArchitecture              a GGUF this llama.cpp cannot run (its log names the kind)
    ├── EnginePortTaken                  another program listens on the port asked for
    ├── EngineStartTimeout               no answer within the (machine-scaled) wait
    ├── EngineStopped                    the child ended: a crash by signal or an exit status
    │   └── EngineCrashed                ... while it was serving (Restart is the remedy)
    └── DownloadError                    getting a model from the hub failed (``repo_id``)
        ├── GatedModelError              the repository needs a token with granted access
        ├── HubEntryNotFoundError        no such repository, revision or file
        ├── DownloadInterruptedError     the network went away; the partial file is kept
        ├── DiskFullError                not enough free space; the partial file is kept
        ├── ChecksumMismatchError        the bytes are not the published ones; deleted
        └── DownloadCancelledError       the caller cancelled; the partial file is kept

No message carries the hub token or the engine's API key: the key never reaches the
child's command line or its log, so a log tail quoted in an error cannot hold it.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping
from pathlib import Path


class EngineError(RuntimeError):
    """Base class of every error the engine raises; ``str(error)`` is the sentence to show."""


class ModelFileError(EngineError):
    """A model file on disk cannot be used.

    Attributes:
        path: The file the sentence is about.
    """

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


class UnreadableModelError(ModelFileError):
    """There is no file at the path, it is a folder, or the app may not read it."""


class NotGgufError(ModelFileError):
    """The file does not start with GGUF's magic bytes."""


class UnsupportedGgufError(ModelFileError):
    """A GGUF llama.cpp cannot load: version 1, an unknown version, or big-endian."""


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

# Signals that mean the native code crashed, with what a person can do about it.
CRASH_ADVICE = {
    signal.SIGILL: "this build of llama.cpp needs CPU instructions this machine lacks; "
                   "install the portable CPU build (xllamacpp, AVX2 or newer)",
    signal.SIGSEGV: "it crashed in native code; the model file or the build may be broken: "
                    "try another model file or reinstall xllamacpp",
    signal.SIGBUS: "it crashed reading memory, often a model file that was cut short or "
                   "changed while in use: download it again",
    signal.SIGABRT: "it aborted; the last lines of its log say why",
    signal.SIGKILL: "something killed it (often the system running out of memory): "
                    "a smaller model or a shorter context needs less",
}


def describe_exit(returncode: int | None, *, process: str = "the engine",
                  advice: Mapping[signal.Signals, str] = CRASH_ADVICE) -> str:
    """Say in words how the engine process ended (``None``: it is still running).

    A negative return code is the signal that ended it; a crash by signal is a
    different failure from a server that refused to start, and the fix differs.
    ``process`` and ``advice`` let a test harness that runs llama.cpp's server itself
    say the same in its own words (its fix is a reinstall script, not a download).
    """
    if returncode is None:
        return f"{process} is still running"
    if returncode >= 0:
        return f"{process} exited with status {returncode}"
    try:
        killer = signal.Signals(-returncode)
    except ValueError:
        return f"{process} was killed by signal {-returncode}"
    fix = advice.get(killer)
    message = f"{process} was killed by {killer.name}"
    return f"{message}: {fix}" if fix else message


class EngineNotInstalled(EngineError):
    """llama.cpp's server (the ``xllamacpp`` package) is not installed in this Python."""


class UnknownArchitecture(EngineError):
    """The GGUF holds a kind of model this build of llama.cpp cannot run.

    Attributes:
        path: The model file.
        architecture: The kind named in the file (``general.architecture``).
    """

    def __init__(self, path: Path, architecture: str) -> None:
        super().__init__(
            f"{path.name} is a “{architecture}” model, which this version of llama.cpp "
            "cannot run yet. A newer app may; meanwhile choose another model.")
        self.path = path
        self.architecture = architecture


class EnginePortTaken(EngineError):
    """Another program already listens on the port the engine was asked to use.

    Attributes:
        port: That port.
    """

    def __init__(self, port: int) -> None:
        super().__init__(
            f"Port {port} on 127.0.0.1 is already in use by another program; stop it or "
            "choose another port.")
        self.port = port


class EngineStartTimeout(EngineError):
    """The engine did not answer within the wait allowed for this model on this machine.

    Attributes:
        seconds: How long it was given.
        log_tail: The last lines of the engine's log, for a details view.
    """

    def __init__(self, path: Path, seconds: float, log_tail: str = "") -> None:
        super().__init__(
            f"The engine did not get {path.name} ready within {seconds:.0f} s; the machine may "
            "be very busy or short of memory.")
        self.seconds = seconds
        self.log_tail = log_tail


class EngineStopped(EngineError):
    """The engine process ended; the message says how (a signal by name, with advice).

    Attributes:
        returncode: The process's return code (negative: the signal's number).
        signal_name: ``"SIGKILL"`` and the like when a signal ended it, else None.
        log_tail: The last lines of the engine's log, for a details view (not in the
            message: a card shows the sentence, a Details button the tail).
    """

    def __init__(self, returncode: int, log_tail: str = "", *, when: str = "") -> None:
        what = describe_exit(returncode)
        sentence = f"{when}: {what}." if when else f"{what[0].upper()}{what[1:]}."
        said = last_error_line(log_tail) if returncode >= 0 else None
        super().__init__(f"{sentence} It said: {said}" if said else sentence)
        self.returncode = returncode
        self.log_tail = log_tail
        self.signal_name: str | None = None
        if returncode < 0:
            try:
                self.signal_name = signal.Signals(-returncode).name
            except ValueError:
                self.signal_name = None


class EngineCrashed(EngineStopped):
    """The engine ended while serving, without being asked to: offer Restart."""


#: The mark llama.cpp's log puts on its error lines (``0.00.006.061 E srv  start: ...``).
_LLAMA_ERROR_LINE = re.compile(r"^\S+ E (.+)$")
#: The child's own words for a failure it caught (see ``engine_child``).
CHILD_ERROR_PREFIX = "engine error: "


def last_error_line(log_tail: str) -> str | None:
    """The engine's last error line in its log, without the timestamp, or None."""
    for line in reversed(log_tail.splitlines()):
        if line.startswith(CHILD_ERROR_PREFIX):
            return line.removeprefix(CHILD_ERROR_PREFIX).strip()
        match = _LLAMA_ERROR_LINE.match(line)
        if match:
            return " ".join(match.group(1).split())
    return None

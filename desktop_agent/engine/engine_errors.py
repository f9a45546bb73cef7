"""What can go wrong when the app runs a model itself, as types that each carry a sentence.

Front ends map each type to a card and an action (a crash offers Restart, a damaged
file offers to download it again, a taken port offers another port) without parsing
strings; the message is the sentence a person reads::

    EngineError                     the engine could not run the model
     ├── EngineNotInstalled         llama.cpp's server (xllamacpp) is missing
     ├── ModelFileInvalid           missing, not GGUF, truncated or damaged: refused before start
     ├── UnknownArchitecture        a GGUF this llama.cpp cannot run (its log names the kind)
     ├── EnginePortTaken            another program listens on the port asked for
     ├── EngineStartTimeout         no answer within the (machine-scaled) wait
     └── EngineStopped              the child ended: a crash by signal or an exit status
          └── EngineCrashed         ... while it was serving (Restart is the remedy)

No message carries the engine's API key: the key never reaches the child's command
line or its log, so a log tail quoted in an error cannot hold it either.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

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


def describe_exit(returncode: int | None) -> str:
    """Say in words how the engine process ended (``None``: it is still running).

    A negative return code is the signal that ended it; a crash by signal is a
    different failure from a server that refused to start, and the fix differs.
    """
    if returncode is None:
        return "the engine is still running"
    if returncode >= 0:
        return f"the engine exited with status {returncode}"
    try:
        killer = signal.Signals(-returncode)
    except ValueError:
        return f"the engine was killed by signal {-returncode}"
    advice = CRASH_ADVICE.get(killer)
    message = f"the engine was killed by {killer.name}"
    return f"{message}: {advice}" if advice else message


class EngineError(RuntimeError):
    """The engine could not run the model; ``str(error)`` is the sentence to show."""


class EngineNotInstalled(EngineError):
    """llama.cpp's server (the ``xllamacpp`` package) is not installed in this Python."""


class ModelFileInvalid(EngineError):
    """The model file is missing, not a GGUF file, cut short or damaged.

    Raised before any process starts, so nothing is loaded from a bad file.

    Attributes:
        path: The file refused.
    """

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


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

"""``desktop-agent models``: the models on this computer; ``models pull``: download one.

``desktop-agent models`` lists what the app's library finds (LM Studio's, Ollama's,
Hugging Face's and llama.cpp's folders, and the folders added in the Models window),
as ``lms ls`` and ``ollama list`` do: name, parameters, quantisation, trained
context, size, whether it fits in the memory free now, and the file. ``--json``
prints the same records ``GET /local-models`` answers, for scripts.

``desktop-agent models pull REPO[/FILE]`` (or a catalog id such as ``qwen3-1.7b``)
downloads into the Hugging Face cache, where the library, llama.cpp and the hub's
own tools all find it, with a progress line on a terminal. Ctrl+C keeps what was
downloaded; the same command resumes. Only the standard library is imported at the
top; the engine loads when the command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.engine.download_progress import DownloadProgress
    from desktop_agent.engine.library import LibraryEntry

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``models`` and its ``pull``."""
    command = subparsers.add_parser(
        "models", help="list the models on this computer (models pull: download one)",
        description="List the GGUF models the app finds on this computer: LM Studio's, "
        "Ollama's, Hugging Face's and llama.cpp's folders and the ones you added.")
    command.add_argument("--json", action="store_true", help="print JSON records for scripts")
    command.add_argument("--folder", action="append", type=Path, default=[], metavar="DIR",
                         help="also look in this folder (repeatable)")
    command.set_defaults(handler=list_models)
    actions = command.add_subparsers(dest="models_action", metavar="ACTION")
    pull = actions.add_parser(
        "pull", help="download a model from Hugging Face",
        description="Download a GGUF model into the Hugging Face cache (resumable; the "
        "checksum is verified). SOURCE is owner/repo/file.gguf, owner/repo (its Q4_K_M "
        "file) or a catalog id such as qwen3-1.7b. A token for gated repositories comes "
        "from HF_TOKEN or the app's keyring.")
    pull.add_argument("source", metavar="SOURCE", help="REPO[/FILE] or a catalog id")
    pull.add_argument("--revision", default=None, help="branch, tag or commit (default main)")
    pull.set_defaults(handler=pull_model)


# -- models ------------------------------------------------------------------------------

def list_models(args: argparse.Namespace) -> int:
    """Scan the library and print it."""
    from desktop_agent.engine.library import ModelLibrary

    library = ModelLibrary(_data_folder(), extra_folders=(*_added_folders(), *args.folder))
    entries = library.scan()
    if args.json:
        print(json.dumps([entry.to_json() for entry in entries], indent=2))
        return EXIT_OK
    if not entries:
        print("No models found on this computer. Get one with: "
              "desktop-agent models pull qwen3-1.7b (about 1.1 GB)")
        return EXIT_OK
    _print_table(entries)
    return EXIT_OK


def _print_table(entries: list[LibraryEntry]) -> None:
    from desktop_agent.engine.fit import gigabytes

    rows = [("NAME", "PARAMS", "QUANT", "CONTEXT", "SIZE", "FITS", "FILE")]
    for entry in entries:
        info, fit = entry.info, entry.fit
        rows.append((
            entry.display_name, (info.size_label or "?") if info else "-",
            (info.quantization or "?") if info else "-",
            f"{info.context_length:,}" if info and info.context_length else "-",
            gigabytes(entry.size_bytes),
            "no: see below" if info is None else _fits_word(fit.verdict.value if fit else None),
            str(entry.path)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              + "  " + row[-1])
    for entry in entries:
        if entry.problem:
            print(f"\n{entry.display_name}: {entry.problem}")


def _fits_word(verdict: str | None) -> str:
    return {"fits": "yes", "tight": "tight", "too_big": "no", "unknown": "unknown"}.get(
        verdict or "", "?")


def _data_folder() -> Path:
    from desktop_agent.appdata.paths import data_dir

    return data_dir()


def _added_folders() -> tuple[Path, ...]:
    """The folders added in the Models window (kept in the store's app settings)."""
    from desktop_agent.appdata.paths import database_path

    if not database_path().exists():
        return ()
    try:
        from desktop_agent.session import EnginePreferences
        from desktop_agent.store import Store

        with Store.open(database_path()) as store:
            return EnginePreferences.from_json(store.get_setting("local_engine")).folders
    except Exception:  # noqa: BLE001 - a store another version wrote: list the usual folders
        return ()


# -- models pull ---------------------------------------------------------------------------

def pull_model(args: argparse.Namespace) -> int:
    """Download with a progress line; Ctrl+C keeps the partial file."""
    from desktop_agent.engine.catalog import CATALOG
    from desktop_agent.engine.errors import DownloadCancelledError, DownloadError
    from desktop_agent.engine.hub_files import choose_file, parse_source, repo_files

    token = _token()
    picked = next((m for m in CATALOG if args.source.strip().lower() == m.id), None)
    try:
        filename: str | None
        if picked is not None:
            repo_id, filename, revision = picked.repo_id, picked.filename, "main"
        else:
            repo_id, filename, revision = parse_source(args.source)
        revision = args.revision or revision
        if filename is None:
            filename = choose_file(repo_id, repo_files(repo_id, revision=revision, token=token))
    except (ValueError, DownloadError) as exc:
        print(f"models pull: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"Downloading {filename} from {repo_id}…", flush=True)
    bar = ProgressLine(sys.stdout)
    cancel, done = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}
    threading.Thread(target=_download, name="models pull", daemon=True,
                     args=(repo_id, filename, revision, token, bar.show, cancel, outcome,
                           done)).start()
    try:
        # An Event, not Thread.join: Ctrl+C inside join() can leave the thread looking ended.
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        cancel.set()
        done.wait()
    bar.end()
    error = outcome.get("error")
    if isinstance(error, DownloadCancelledError):
        print(f"Stopped. {error} Run the same command again to resume:\n"
              f"  desktop-agent models pull {args.source}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(error, DownloadError):
        print(f"models pull: {error}", file=sys.stderr)
        return EXIT_ERROR
    if error is not None:
        raise error
    path = outcome["path"]
    print(f"Downloaded to {path}\nRun it: desktop-agent serve --model {Path(path).name}")
    return EXIT_OK


def _download(repo_id: str, filename: str, revision: str, token: str | None,
              progress: Any, cancel: threading.Event, outcome: dict[str, Any],
              done: threading.Event) -> None:
    from desktop_agent.engine.downloads import DownloadRequest, download_model

    try:
        outcome["path"] = download_model(DownloadRequest(repo_id, filename, revision,
                                                         token=token),
                                         progress=progress, cancel=cancel)
    except BaseException as exc:  # noqa: BLE001 - the main thread says it or raises it
        outcome["error"] = exc
    finally:
        done.set()


def _token() -> str | None:
    if os.environ.get("HF_TOKEN", "").strip():
        return os.environ["HF_TOKEN"].strip()
    try:
        from desktop_agent.session import hub_token

        return hub_token()
    except Exception:  # noqa: BLE001 - no keyring: public repositories still download
        return None


class ProgressLine:
    """Bytes, speed and time left on one line a terminal redraws; sparse lines elsewhere."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._last_line = 0.0
        self._drawn = False

    def show(self, progress: DownloadProgress) -> None:
        """Called from the download's thread (at most ten times a second)."""
        text = describe_progress(progress)
        if self._tty:
            self._stream.write(f"\r{text:<78}")
            self._stream.flush()
            self._drawn = True
        elif time.monotonic() - self._last_line >= 5.0 or progress.verifying:
            self._last_line = time.monotonic()
            self._stream.write(text + "\n")
            self._stream.flush()

    def end(self) -> None:
        """Leave the line drawn so far and move on."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()


def describe_progress(progress: DownloadProgress) -> str:
    """``1.2 GB of 2.5 GB (48%)  34 MB/s  0:00:38 left`` (or ``checking…``)."""
    from desktop_agent.engine.fit import gigabytes

    if progress.verifying:
        return f"checking the checksum… {gigabytes(progress.downloaded_bytes)}"
    total = progress.total_bytes
    text = f"{gigabytes(progress.downloaded_bytes)}"
    if total:
        text += f" of {gigabytes(total)} ({100 * progress.downloaded_bytes // total}%)"
    if progress.bytes_per_second:
        text += f"  {gigabytes(int(progress.bytes_per_second))}/s"
    if progress.seconds_left is not None:
        left = int(progress.seconds_left)
        text += f"  {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d} left"
    return text

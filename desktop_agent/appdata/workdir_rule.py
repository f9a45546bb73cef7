"""The one rule for where a conversation may work, checked at every use.

A working folder is where a conversation's commands and file tools may write.
Three folders must never be one, because a command there would reach what
the app trusts:

* the data folder itself (``config.json`` names MCP servers the app starts
  unsandboxed; the database holds every conversation),
* anything else inside it, except the app's own per-conversation folders,
* the folder that holds those (every other conversation's files): the data
  folder's ``workdirs``, or the folder ``serve --workdirs`` names (a volume
  every replica shares), wherever it is.

The path must also be its own real path: no component may be a symbolic
link. A folder checked once and followed again later can be redirected by a
link planted in between (one conversation runs ``ln -s / x``, another works in
``…/x``); refusing links at every use closes that, and the sandbox and the
file tools then pin the folder by its inode (:class:`~desktop_agent.core.
tooling.builtin.workdir.Workdir`). A folder that *contains* the data folder
(a person choosing their home folder) is allowed: every tool sees the data
folder there as absent (:func:`hidden_folders`).

Callers: the session's ``workdir_path`` (window, REST commands and files, the
model's tools) and the import check. Nothing else decides.
"""

from __future__ import annotations

import os
from pathlib import Path

from desktop_agent.appdata import paths


class WorkdirRefused(ValueError):
    """A working folder breaks the rule; the message says which part, in words."""


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def checked_workdir(path: str | os.PathLike[str], workdirs_root: Path | None = None) -> Path:
    """``path`` as a working folder, or :class:`WorkdirRefused` saying why not.

    Args:
        path: An absolute path (``~`` is expanded); it need not exist yet.
        workdirs_root: Where this app makes per-conversation folders, when
            not the data folder's ``workdirs`` (``serve --workdirs``, scripts
            embedding the session); it is refused like the data folder's
            ``workdirs``, and inside the data folder its children count as the
            app's own. It never opens the data folder itself: a root that is
            the data folder or holds it makes nothing inside it acceptable.

    Returns:
        The same path, normalised (it is already its real path).

    Raises:
        WorkdirRefused: It is relative, goes through a symbolic link, or is the
            data folder, inside it (other than a conversation's own folder) or
            the folder of every conversation's folders.
    """
    text = os.fspath(path)
    if not text.strip() or "\x00" in text:
        raise WorkdirRefused("the working folder is empty or malformed")
    folder = Path(os.path.expanduser(text))
    if not folder.is_absolute():
        raise WorkdirRefused(f"the working folder {text!r} is not an absolute path")
    folder = Path(os.path.normpath(folder))
    try:
        real = _real(folder)
    except (OSError, RuntimeError) as exc:
        raise WorkdirRefused(f"the working folder {text!r} cannot be resolved: {exc}") from exc
    if real != folder:
        raise WorkdirRefused(
            f"the working folder {str(folder)!r} leads to {str(real)!r} through a symbolic "
            "link; a working folder is used only by its real path, so a link swapped in later "
            "cannot move it. Choose the real folder")
    data = _real(paths.data_dir())
    roots = {data / paths.WORKDIRS_NAME}
    if workdirs_root is not None:
        roots.add(_real(workdirs_root))
    if real == data:
        raise WorkdirRefused(f"{str(real)!r} is the app's data folder (its settings and "
                             "database); it cannot be a working folder")
    if real in roots:
        raise WorkdirRefused(f"{str(real)!r} holds every conversation's folder; it cannot be "
                             "a working folder")
    own_roots = [r for r in roots if r.is_relative_to(data) and r != data]
    if real.is_relative_to(data) and not any(real.is_relative_to(r) for r in own_roots):
        raise WorkdirRefused(f"{str(real)!r} is inside the app's data folder; only a "
                             "conversation's own folder there can be a working folder")
    return real


def own_workdir(root: Path, conversation_id: str) -> Path:
    """The app's folder for a conversation under ``root``, by its real path."""
    return _real(root) / conversation_id


def hidden_folders() -> tuple[str, ...]:
    """Folders every tool must see as absent, even inside a working folder."""
    return (str(_real(paths.data_dir())),)

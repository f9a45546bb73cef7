"""Creating a conversation: one rule for its title and its working folder, for every front end.

The window made each new conversation a dated folder under the folder chosen
in Preferences; the REST server left the setting out and worked in
``workdirs/<id>``. A script and a person then found their files by different
rules, and the window's rule gave two conversations made in the same minute
one folder. Both front ends now create through :func:`create_conversation`:

* A ``workdir`` given in the settings is kept as it is (the front end has
  checked it against :mod:`desktop_agent.appdata.workdir_rule`, and every use
  checks it again).
* Otherwise the conversation works in a new folder ``Chat <date> <time>``
  (``Chat 2026-11-24 09.30``, then ``Chat 2026-11-24 09.30 (2)``) under the
  front end's work root: the Preferences folder (``~/Desktop Agent`` by
  default) for the window, the ``workdirs`` folder of the data folder (or
  ``create_app(workdirs_root=...)``) for ``serve``. The folder is made at once,
  so the name is taken; the setting records it, so the folder never depends
  on which front end opens the conversation later.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.store.conversation_crud import DEFAULT_TITLE
from desktop_agent.store.write_checks import check_settings

if TYPE_CHECKING:
    from desktop_agent.store import ConversationRecord, Store

__all__ = ["DEFAULT_TITLE", "create_conversation", "is_new_work_folder", "new_work_folder",
           "release_work_folder"]

log = logging.getLogger("desktop_agent.session.new_conversations")

#: How many ``(n)`` suffixes are tried before the name is given up as taken.
_MAX_SUFFIX = 1000


def new_work_folder(root: Path, now: float | None = None) -> Path:
    """Make and return a readable, unused folder for a new conversation under ``root``.

    Under ``root``'s real path: a working folder is used only by its real path
    (see :mod:`desktop_agent.appdata.workdir_rule`), and a home reached through
    a link (``/home`` -> ``/var/home``) must not make every new conversation
    refused. Making the folder is what reserves its name: a name only checked
    for existence would be handed to every conversation made before the first
    one's first turn.

    When ``root`` cannot be written (a read-only disk, a removed drive), the
    first free name is returned unmade: the conversation is still created, and
    its first tool call or command says why its folder cannot be used.
    """
    stamp = time.strftime("%Y-%m-%d %H.%M", time.localtime(now))
    base = Path(os.path.realpath(root)) / f"Chat {stamp}"
    for n in range(1, _MAX_SUFFIX + 1):
        candidate = base if n == 1 else base.with_name(f"{base.name} ({n})")
        try:
            candidate.mkdir(parents=True)
        except FileExistsError:
            continue
        except OSError as exc:
            log.warning("cannot make the working folder %s: %s", candidate, exc)
            if not candidate.exists():
                return candidate
            continue
        return candidate
    raise FileExistsError(f"Every name for a new working folder under {base.parent} is taken "
                          f"(up to '{base.name} ({_MAX_SUFFIX})').")


def create_conversation(store: Store, work_root: Path, *, title: str = DEFAULT_TITLE,
                        settings: Mapping[str, Any] | None = None) -> ConversationRecord:
    """Store a new conversation whose ``workdir`` follows the rule in the module docstring.

    Blocking (it makes a folder and writes the database): front ends on an
    event loop call it in a worker thread.

    Args:
        store: Where the conversation is kept.
        work_root: The front end's parent of new working folders.
        title: Its title; the default is the one every front end shows.
        settings: Its settings; a non-empty ``workdir`` among them is kept.

    Raises:
        ValueError: The store refused the settings (a key or token among them,
            an unknown sandbox level; the message says which, in words); no
            folder is made and nothing is stored.
    """
    chosen = check_settings(dict(settings or {}))  # refused before a folder is made
    workdir = chosen.get("workdir")
    if not (isinstance(workdir, str) and workdir.strip()):
        chosen["workdir"] = str(new_work_folder(work_root))
    return store.create_conversation(title=title, settings=chosen)


def is_new_work_folder(workdir: object, work_root: Path) -> bool:
    """Whether ``workdir`` is a folder :func:`new_work_folder` named (not one a person chose)."""
    if not isinstance(workdir, str) or not workdir:
        return False
    folder = Path(workdir)
    return folder.parent == Path(os.path.realpath(work_root)) and folder.name.startswith("Chat ")


def release_work_folder(settings: Mapping[str, Any], work_root: Path) -> bool:
    """Remove the folder :func:`create_conversation` made, if the conversation never used it.

    For a conversation dropped unused (the window closes an empty, unnamed
    tab): its folder is removed only while it is empty and still the one this
    module named under ``work_root``, so a folder the person chose, or one
    holding anything, is never touched.

    Returns:
        Whether the folder was removed.
    """
    workdir = settings.get("workdir")
    if not is_new_work_folder(workdir, work_root):
        return False
    folder = Path(str(workdir))
    try:
        folder.rmdir()  # refuses a folder with anything in it
    except OSError:
        return False
    return True

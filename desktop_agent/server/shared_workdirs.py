"""Where ``serve`` makes conversations' working folders: ``--workdirs``, shared by replicas.

Tools work on files, and files live on a machine. With several replicas on one
PostgreSQL database a conversation is created through one replica (which makes
its folder and saves the path in its settings) and run through any other, whose
tools must find the same files at the same path. The honest answer is one
folder every replica mounts at the same path (an NFS export, a shared volume),
named by ``--workdirs`` (or ``DESKTOP_AGENT_WORKDIRS``).

A replica started on its own local folder by mistake would not fail at once: it
would make folders no other replica sees, and a turn run elsewhere would find an
empty folder, or write files no one can read back. So with ``--database``:

- ``serve`` refuses to start without ``--workdirs`` (saying what it is for), as
  a data folder's ``workdirs`` is a folder of one machine;
- the first replica leaves a marker file with a random id in the folder and
  records the id in the database; a replica whose folder holds no marker, or
  another one, is refused with a sentence naming the folder. So a folder that
  is not the shared one is caught at start, not after a turn went wrong.

Without ``--database`` (one ``serve`` on SQLite) ``--workdirs`` simply moves
the folder, default the data folder's ``workdirs``; nothing is checked.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from desktop_agent.appdata import paths

if TYPE_CHECKING:
    from desktop_agent.store import Store

WORKDIRS_VARIABLE = "DESKTOP_AGENT_WORKDIRS"
"""Where ``serve`` reads ``--workdirs`` from when the option is not given."""

MARKER_NAME = ".desktop-agent-workdirs"
"""The file in the shared folder holding its id (not a folder: no conversation works there)."""

SHARED_ID_SETTING = "serve_shared_workdirs_id"
"""The app setting (in the database) holding the id of the folder every replica shares."""


class WorkdirsRefused(Exception):
    """``--workdirs`` cannot be used; the message says why, in words."""


def chosen_workdirs(text: str) -> Path:
    """``--workdirs`` as a real, absolute folder, made if missing.

    Resolved once here (a link in the configured path is the operator's
    choice); every working folder under it is then checked at each use by the
    working-folder rule, links refused.

    Raises:
        WorkdirsRefused: The folder is the data folder, inside it (other than
            its ``workdirs``) or holds it, so conversations' files and the app's
            own (settings, database) would mix; or it cannot be made.
    """
    folder = Path(os.path.realpath(os.path.expanduser(text.strip())))
    data = Path(os.path.realpath(paths.data_dir()))
    if folder != data / paths.WORKDIRS_NAME:
        if folder.is_relative_to(data):
            raise WorkdirsRefused(
                f"--workdirs {str(folder)!r} is inside the app's data folder {str(data)!r}; "
                "choose a folder outside it (the data folder holds settings and keys no "
                "command may reach)")
        if data.is_relative_to(folder):
            raise WorkdirsRefused(
                f"--workdirs {str(folder)!r} holds the app's data folder {str(data)!r}; "
                "choose a folder of its own for conversations' working folders")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkdirsRefused(f"--workdirs {str(folder)!r} cannot be made: {exc}") from exc
    return folder


def folder_id(root: Path) -> str:
    """The id in ``root``'s marker file, written first if there is none.

    The marker is written whole under another name and linked into place, so
    replicas starting together on one shared folder all read the same id.

    Raises:
        WorkdirsRefused: The marker cannot be read or written.
    """
    marker = root / MARKER_NAME
    try:
        if not marker.exists():
            draft = root / f"{MARKER_NAME}.{uuid.uuid4().hex}"
            draft.write_text(uuid.uuid4().hex + "\n", encoding="ascii")
            try:
                os.link(draft, marker)
            except FileExistsError:
                pass  # another replica's came first: use it
            finally:
                draft.unlink(missing_ok=True)
        text = marker.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkdirsRefused(
            f"the marker {str(marker)!r} of --workdirs cannot be read or written: {exc}"
        ) from exc
    if len(text) != 32 or any(c not in "0123456789abcdef" for c in text):
        raise WorkdirsRefused(
            f"{str(marker)!r} is not a marker this app wrote; remove it if the folder is new")
    return text


def check_shared(store: Store, root: Path) -> None:
    """Refuse a replica whose ``--workdirs`` is not the folder the others share.

    Raises:
        WorkdirsRefused: The database records another folder's id than ``root``'s.
    """
    mine = folder_id(root)
    shared = store.setting_once(SHARED_ID_SETTING, mine)
    if shared != mine:
        raise WorkdirsRefused(
            f"--workdirs {str(root)!r} is not the folder the other replicas of this database "
            f"share (its marker {MARKER_NAME} holds another id than the one the database "
            "records). Every replica must see one shared folder (an NFS export or a shared "
            "volume) at the same path; mount it and start again")

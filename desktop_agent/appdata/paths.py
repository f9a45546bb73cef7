"""Where Desktop Agent keeps its files.

Everything the app writes lives under one data folder: the platform's
per-user application-data directory (stable across upgrades, because the app
name never changes), or the folder named by ``DESKTOP_AGENT_DATA_DIR`` so tests,
portable installs and the REST server can point somewhere else. Folders are
created on demand, at the moment something asks for them.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "desktop-agent"
#: The data folder's sub-folder holding the app's per-conversation work folders.
WORKDIRS_NAME = "workdirs"
DATA_DIR_ENV = "DESKTOP_AGENT_DATA_DIR"


def data_dir() -> Path:
    """The folder for the database, config and work folders; created if missing.

    Read on every call (not cached) so that a changed ``DESKTOP_AGENT_DATA_DIR``
    takes effect at once, which tests rely on.
    """
    override = os.environ.get(DATA_DIR_ENV, "").strip()
    folder = (
        Path(override).expanduser()
        if override
        else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False, roaming=False))
    )
    # Private to the user: it holds their conversations (never keys, but still theirs).
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def database_path() -> Path:
    """The SQLite file holding conversations, messages and app settings."""
    return data_dir() / "conversations.sqlite3"


def config_path() -> Path:
    """The JSON config file (``{"mcpServers": {...}, "permissions": [...]}``)."""
    return data_dir() / "config.json"


def workdirs_dir() -> Path:
    """The parent folder of per-conversation work folders; created if missing."""
    folder = data_dir() / WORKDIRS_NAME
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def secret_names_path() -> Path:
    """The index of secret *names* (never values) kept by :mod:`desktop_agent.appdata.secrets`."""
    return data_dir() / "secret-names.json"

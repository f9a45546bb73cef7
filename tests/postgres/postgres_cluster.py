"""A private PostgreSQL cluster for one test session: ``initdb`` in a temporary folder.

The PostgreSQL tier runs against the real server (Debian's ``postgresql``, installed by
``.ci/install_postgres.sh``), not a stand-in, but never against a cluster the machine
already runs: each session makes its own in a temporary folder, on a free port of
127.0.0.1, and removes it at the end. Nothing outside that folder is touched.

PostgreSQL refuses to run as root, and CI runs as root, so there the cluster belongs to
the ``postgres`` account that Debian's package creates, and every server command is run
as it with ``runuser``. As a normal user the cluster is simply that user's.

Connections use a password over TCP (``scram-sha-256``), like a real deployment's
``postgresql://user:pass@host:port/db`` URL, so the URL handling is exercised too.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CLUSTER_OWNER = "postgres"
"""The account a root test run gives the cluster to (Debian's package creates it)."""

SUPERUSER = "desktop_agent_tests"
START_ATTEMPTS = 3
COMMAND_TIMEOUT = 120


class PostgresUnavailable(Exception):
    """PostgreSQL is not installed here, or its cluster could not be started."""


def find_bin_dir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres`` (the newest version).

    Debian keeps them in ``/usr/lib/postgresql/<version>/bin``, off the PATH.

    Raises:
        PostgresUnavailable: No PostgreSQL server is installed.
    """
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if candidates:
        return candidates[-1].parent
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    raise PostgresUnavailable(
        "PostgreSQL is not installed (no initdb; run bash .ci/install_postgres.sh)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresCluster:
    """A running private cluster.

    Attributes:
        folder: The temporary folder holding the data, log, socket and password file.
        port: Its TCP port on 127.0.0.1.
        password: The superuser's password.
        bin_dir: Where its programs are.
    """

    folder: Path
    port: int
    password: str
    bin_dir: Path
    options: str = ""
    _databases: int = field(default=0, repr=False)

    @property
    def data_dir(self) -> Path:
        """The cluster's data folder."""
        return self.folder / "data"

    @property
    def log_file(self) -> Path:
        """The server's log (shown when a start fails)."""
        return self.folder / "server.log"

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql://`` URL with the password, for ``database``."""
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; returns its URL (one per test keeps tests apart)."""
        import psycopg

        self._databases += 1
        name = f"test_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def dump(self, database_url: str) -> str:
        """``pg_dump`` of a database as SQL text (what a leaked backup would show)."""
        result = subprocess.run(
            [str(self.bin_dir / "pg_dump"), "--dbname", database_url],
            capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False,
        )
        if result.returncode != 0:
            raise PostgresUnavailable(f"pg_dump failed: {result.stderr.strip()}")
        return result.stdout

    def pause(self) -> None:
        """Stop the server (open sessions are ended), keeping its data: a database outage."""
        _run_as_owner([str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.data_dir),
                       "-m", "fast", "-w", "-t", "60"])

    def resume(self) -> None:
        """Start the server :meth:`pause` stopped, on the same port."""
        _run_as_owner([str(self.bin_dir / "pg_ctl"), "start", "-D", str(self.data_dir), "-w",
                       "-t", "60", "-l", str(self.log_file), "-o", self.options])

    def stop(self) -> None:
        """Stop the server at once (open sessions are ended) and remove the folder."""
        try:
            if (self.data_dir / "postmaster.pid").exists():
                _run_as_owner(
                    [str(self.bin_dir / "pg_ctl"), "stop", "-D", str(self.data_dir),
                     "-m", "immediate", "-w"],
                    check=False,
                )
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def _owner_ids() -> tuple[int, int] | None:
    """uid and gid to give the cluster to, or None to keep it the current user's."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(CLUSTER_OWNER)
    except KeyError as exc:
        raise PostgresUnavailable(
            f"running as root and there is no '{CLUSTER_OWNER}' account to run PostgreSQL "
            "as (run bash .ci/install_postgres.sh)"
        ) from exc
    return entry.pw_uid, entry.pw_gid


def _run_as_owner(
    command: list[str], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    program = Path(command[0]).name
    if _owner_ids() is not None:
        command = ["runuser", "-u", CLUSTER_OWNER, "--", *command]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False,
    )
    if check and result.returncode != 0:
        raise PostgresUnavailable(
            f"{program} failed (exit {result.returncode}): "
            f"{result.stderr.strip() or result.stdout.strip()}"
        )
    return result


def start_cluster() -> PostgresCluster:
    """Make and start a private cluster; the caller must :meth:`~PostgresCluster.stop` it.

    Raises:
        PostgresUnavailable: PostgreSQL is missing or would not start (with its log).
    """
    bin_dir = find_bin_dir()
    owner = _owner_ids()
    folder = Path(tempfile.mkdtemp(prefix="desktop-agent-pg-"))
    password = secrets.token_hex(16)
    try:
        password_file = folder / "password"
        password_file.write_text(password + "\n")
        if owner is not None:
            os.chown(folder, *owner)
            os.chown(password_file, *owner)
        _run_as_owner([
            str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", SUPERUSER,
            f"--pwfile={password_file}", "--auth-host=scram-sha-256",
            "--auth-local=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8",
        ])
        password_file.unlink()
        last_error = ""
        for _ in range(START_ATTEMPTS):  # another process may take the free port first
            port = _free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={folder}"
                " -c max_connections=300 -c fsync=off -c full_page_writes=off"
            )
            result = _run_as_owner(
                [str(bin_dir / "pg_ctl"), "start", "-D", str(folder / "data"), "-w",
                 "-t", "60", "-l", str(folder / "server.log"), "-o", options],
                check=False,
            )
            if result.returncode == 0:
                return PostgresCluster(folder, port, password, bin_dir, options)
            log = (folder / "server.log").read_text(errors="replace")[-2000:]
            last_error = f"{result.stderr.strip()}\n{log}"
        raise PostgresUnavailable(f"PostgreSQL would not start: {last_error}")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise

"""Fixtures for the store and secrets tests: real SQLite files, real keyrings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest
from tier_policy import part_missing

from desktop_agent.store import Store

HERE = Path(__file__).parent
PROCESS_TIMEOUT = 60


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """The store on SQLite, for tests of what only SQLite has (its file, its PRAGMAs)."""
    with Store.open(tmp_path / "conversations.sqlite3") as opened:
        yield opened


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The store on each engine in turn: one test, run on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        target = str(tmp_path / "conversations.sqlite3")
    else:
        target = request.getfixturevalue("postgres_url")
    with Store.open(target) as opened:
        yield opened


def run_helper(script: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    """Start one of the helper scripts next to this file as a real subprocess."""
    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(  # type: ignore[call-overload,no-any-return]
        [sys.executable, str(HERE / script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kwargs,
    )


@pytest.fixture
def helper_process():
    """Start a helper script next to this file as a real subprocess (see run_helper)."""
    return run_helper


_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={socket_dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class SecretServiceSession:
    """A private D-Bus session bus with an unlocked gnome-keyring on it."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.processes: list[subprocess.Popen[bytes]] = []
        self.address = ""

    def start(self) -> None:
        for tool in ("dbus-daemon", "gnome-keyring-daemon"):
            if shutil.which(tool) is None:
                part_missing(
                    f"{tool} is not installed (apt-get install gnome-keyring dbus); "
                    "the real Secret Service tests need it"
                )
        runtime = self.home / "run"
        runtime.mkdir(parents=True, mode=0o700)
        env = dict(
            os.environ,
            HOME=str(self.home),
            XDG_DATA_HOME=str(self.home / "data"),
            XDG_RUNTIME_DIR=str(runtime),
        )
        # A bus without service activation: otherwise an early request would make
        # D-Bus start a second, locked gnome-keyring that wins the race.
        config = self.home / "session-bus.conf"
        config.write_text(_BUS_CONFIG.format(socket_dir=runtime), encoding="utf-8")
        bus = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.processes.append(bus)
        assert bus.stdout is not None
        self.address = bus.stdout.readline().decode().strip()
        if not self.address:
            self.stop()
            part_missing("dbus-daemon did not start a session bus")
        env["DBUS_SESSION_BUS_ADDRESS"] = self.address
        daemon = subprocess.Popen(
            ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.processes.append(daemon)
        assert daemon.stdin is not None
        daemon.stdin.write(b"test-keyring-password")
        daemon.stdin.close()

    def wait_ready(self, backend: keyring.backend.KeyringBackend) -> None:
        deadline = time.monotonic() + 15
        # First wait for the daemon to have unlocked its "login" collection as the
        # default: asking the keyring earlier makes it try to create one, which
        # needs a password prompt nobody can answer here.
        while not self._default_collection_unlocked():
            if time.monotonic() > deadline:
                self.stop()
                part_missing("gnome-keyring-daemon did not unlock a default collection in time")
            time.sleep(0.1)
        while True:
            try:
                backend.set_password("desktop-agent-probe", "probe", "ok")
                backend.delete_password("desktop-agent-probe", "probe")
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    part_missing(f"gnome-keyring-daemon did not become usable: {exc}")
                time.sleep(0.1)

    def _default_collection_unlocked(self) -> bool:
        import secretstorage

        try:
            connection = secretstorage.dbus_init()
        except Exception:
            return False
        try:
            collection = secretstorage.Collection(connection)  # the "default" alias
            return not collection.is_locked()
        except Exception:  # no such alias yet, or the service is not on the bus yet
            return False
        finally:
            connection.close()

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        self.processes.clear()


@pytest.fixture(scope="session")
def secret_service_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start a session bus + unlocked gnome-keyring once; yields the bus address."""
    if sys.platform != "linux":
        pytest.skip("the Secret Service exists on Linux only")
    session = SecretServiceSession(tmp_path_factory.mktemp("keyring-home"))
    session.start()
    try:
        from keyring.backends import SecretService

        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DBUS_SESSION_BUS_ADDRESS", session.address)
            session.wait_ready(SecretService.Keyring())
        yield session.address
    finally:
        session.stop()


@pytest.fixture
def secret_service(
    secret_service_bus: str,
    restore_keyring: None,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Use the real Secret Service (gnome-keyring) as the keyring for this test."""
    from keyring.backends import SecretService

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", secret_service_bus)
    keyring.set_keyring(SecretService.Keyring())

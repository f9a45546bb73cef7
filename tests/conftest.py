"""Isolation for every tier, and the fixtures several tiers share.

No test touches the user's real data folder or keys. A fixture more than one
tier needs (a data folder, a store, the scripted model server, a keyring-less
machine, bubblewrap) is defined here once; tier conftests hold only their own.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from desktop_agent.core.tooling.tools import Tool
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# The openai SDK imported as the window imports it (its API type packages deferred),
# so every tier runs the requests on the SDK the app runs them on.
from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits

defer_type_package_inits()

# A run started in the background (`nohup ... &`, as CI may) inherits SIGINT ignored, and
# every process a test starts would inherit that too: Ctrl+C tests and the engine child's
# stop signals then behave as in no terminal. The tests run as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: Shared fixtures: the llama.cpp server (e2e tier, window tests) and a private PostgreSQL cluster.
pytest_plugins = ["e2e.llama.llama_fixtures", "postgres.postgres_fixtures"]


@pytest.fixture(autouse=True)
def isolated_app_data(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh DESKTOP_AGENT_DATA_DIR per test, and no session secrets carried over.

    Tests that need a particular folder set the variable again; this only
    guarantees that nothing falls back to ~/.local/share/desktop-agent.
    """
    folder = tmp_path_factory.mktemp("app-data")
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(folder))
    # New window conversations work in ~/Desktop Agent/...: keep tests out of the real home.
    monkeypatch.setenv("DESKTOP_AGENT_WORK_ROOT", str(folder / "Desktop Agent"))
    from desktop_agent.appdata import secrets

    secrets.default_vault().forget_session()
    yield folder
    secrets.default_vault().forget_session()


@pytest.fixture(autouse=True)
def forget_context_windows() -> Iterator[None]:
    """Windows a server showed are kept per process: a later test's server may reuse a port."""
    yield
    import sys

    applied = sys.modules.get("desktop_agent.core.servers.applied_context")
    if applied is not None:
        applied.forget()


# -- fixtures shared by several tiers (defined once here, never again in a tier) --------


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own data folder, made by the app's code (so privately, as in use).

    ``DESKTOP_AGENT_BASE_URL``/``_MODEL`` are cleared too, so no server chosen in
    the developer's environment leaks into a test's settings.
    """
    from desktop_agent.appdata import paths

    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DESKTOP_AGENT_BASE_URL", raising=False)
    monkeypatch.delenv("DESKTOP_AGENT_MODEL", raising=False)
    return paths.data_dir()


@pytest.fixture
def store(data_dir: Path) -> Iterator[Store]:
    """A real store file in the test's data folder (where the app would open it)."""
    from desktop_agent.store import Store

    with Store.open(data_dir / "conversations.sqlite3") as opened:
        yield opened


@pytest.fixture
def model_server() -> Iterator[ScriptedServer]:
    """The scripted OpenAI-compatible model server, on a free local port."""
    from desktop_agent.testing import ScriptedServer

    with ScriptedServer() as running:
        yield running


@pytest.fixture
def server(model_server: ScriptedServer) -> ScriptedServer:
    """The same scripted model server, under the name the core-facing tiers use."""
    return model_server


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds a scripted reply at a ``Gate`` step until the test sets it."""
    event = threading.Event()
    yield event
    event.set()  # never leave the server thread waiting


@pytest.fixture
def restore_keyring() -> Iterator[None]:
    """Put back the process's keyring backend and forget session secrets afterwards."""
    import keyring

    from desktop_agent.appdata import secrets

    previous = keyring.get_keyring()
    yield
    keyring.set_keyring(previous)
    vault = secrets.default_vault()
    vault._session.clear()
    vault._last_failure = vault._failed_backend = None


@pytest.fixture
def no_keyring(restore_keyring: None, data_dir: Path) -> None:
    """The headless-Linux situation: no keyring backend at all."""
    import keyring
    import keyring.backends.fail

    keyring.set_keyring(keyring.backends.fail.Keyring())


@pytest.fixture
def bubblewrap() -> None:
    """Fail (never skip) where bubblewrap cannot make a sandbox: these tests are the proof."""
    from desktop_agent.core.tooling.builtin.sandbox import sandbox_backend

    if sandbox_backend() != "bwrap":
        pytest.fail("bubblewrap is missing or cannot make a sandbox here; run "
                    ".ci/install_sandbox.sh (these tests must not be skipped)")


@pytest.fixture(scope="session")
def overlay(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Fail (never skip) where commands cannot be previewed on an overlay here.

    Probed once in the session's temporary folder (the disk every test's
    previews live on): a trial preview costs a few hundred milliseconds.
    """
    from desktop_agent.core.tooling.builtin.overlay_mount import overlay_problem

    problem = overlay_problem(tmp_path_factory.getbasetemp() / "overlay-probe")
    if problem is not None:
        pytest.fail(f"previews cannot work here: {problem}")


class WeatherTool:
    """A ``get_weather`` tool that records the arguments it really ran with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def build(self) -> Tool:
        from desktop_agent.core.tooling.tools import tool

        @tool("get_weather", "The weather for a city", {"city": str})
        async def get_weather(args: dict[str, Any]) -> str:
            self.calls.append(dict(args))
            return f"Sunny and 21 °C in {args['city']}"

        return get_weather


@pytest.fixture
def weather() -> WeatherTool:
    return WeatherTool()

"""The installed ``desktop-agent`` command, run as a person runs it: as a subprocess.

``EntryPointChecks`` holds what every way of launching the app must do; this module
runs it against the installed console script, and ``test_binary.py`` runs the same
checks against the frozen binary built by ``build.spec``. The import checks at the
bottom only make sense from source: they look inside the interpreter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tier_policy import part_missing

from desktop_agent.testing.machine_load import MOST, busy_factor, stretched

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("PySide6", "openai", "aiohttp", "fastapi", "uvicorn", "mcp", "tiktoken")
COMMAND_TIMEOUT = 90


def project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class EntryPointChecks:
    """Behaviour shared by the installed command and the frozen binary."""

    command: list[str]

    def run(self, *args: str, env: dict[str, str] | None = None,
            timeout: float | None = None, **popen: Any) -> subprocess.CompletedProcess:
        full_env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **(env or {})}
        return subprocess.run(
            [*self.command, *args],
            capture_output=True,
            text=True,
            # Written for an idle machine; stretched as the app's smoke test stretches its own.
            timeout=timeout or stretched(COMMAND_TIMEOUT, busy_factor()),
            env=full_env,
            check=False,
            **popen,
        )

    def test_version_matches_pyproject(self):
        result = self.run("--version")
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == f"desktop-agent {project_version()}"

    def test_help_lists_every_command(self):
        result = self.run("--help")
        assert result.returncode == 0, result.stderr
        for command in ("serve", "export", "import", "--smoke-test", "--version"):
            assert command in result.stdout
        assert "not available in this build" not in result.stdout

    def test_unknown_command_is_explained_without_a_traceback(self):
        result = self.run("frobnicate")
        assert result.returncode == 2
        assert "invalid choice" in result.stderr
        assert "Traceback" not in result.stderr

    def run_without_display(self, tmp_path: Path, **extra_env: str) -> subprocess.CompletedProcess:
        env = {name: value for name, value in os.environ.items()
               if name not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
        env.update(DESKTOP_AGENT_DATA_DIR=str(tmp_path / "data"), **extra_env)
        return subprocess.run(self.command, capture_output=True, text=True, env=env,
                              timeout=COMMAND_TIMEOUT, check=False)

    def test_with_no_display_the_window_says_so_in_one_sentence(self, tmp_path):
        result = self.run_without_display(tmp_path)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == (
            "desktop-agent: no display found; run `desktop-agent serve` for the REST API, "
            "or set QT_QPA_PLATFORM=offscreen")
        assert result.stdout == ""

    def test_a_display_that_does_not_answer_is_named_instead_of_a_qt_abort(self, tmp_path):
        result = self.run_without_display(tmp_path, DISPLAY=":64999")
        assert result.returncode == 2, result.stderr
        assert "cannot connect to the display :64999" in result.stderr
        assert "xcb-cursor0" not in result.stderr and "Aborted" not in result.stderr

    def test_smoke_test_passes(self, tmp_path):
        result = self.run("--smoke-test", env={"DESKTOP_AGENT_DATA_DIR": str(tmp_path)})
        assert result.returncode == 0, result.stdout + result.stderr
        assert "smoke test passed" in result.stdout
        assert "Traceback" not in result.stderr

    def test_smoke_test_passes_on_a_busy_core_by_stretching_its_waits(self, tmp_path):
        # Two processes spinning on the one core the smoke test may use: at least three
        # times slower than alone (more on a machine busy already).
        core = min(os.sched_getaffinity(0))
        spin = f"import os\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass\n"
        spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
        try:
            result = self.run("--smoke-test", env={"DESKTOP_AGENT_DATA_DIR": str(tmp_path)},
                              timeout=stretched(COMMAND_TIMEOUT, MOST),
                              preexec_fn=lambda: os.sched_setaffinity(0, {core}))
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
        assert result.returncode == 0, result.stdout + result.stderr
        stretch = re.search(r"waits stretched \u00d7([0-9.]+)", result.stdout)
        assert stretch is not None, result.stdout
        assert float(stretch.group(1)) >= 2.0  # it saw the load it ran under

    def test_window_paints_before_heavy_modules_load(self):
        result = self.run(env={"DESKTOP_AGENT_EXIT_AFTER_PAINT": "1"})
        assert result.returncode == 0, result.stdout + result.stderr
        lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
        assert "first-paint" in lines, result.stdout + result.stderr
        # Nothing a conversation needs (openai, FastAPI, MCP, tiktoken) delays the window.
        assert lines["heavy-modules-at-paint"] == "-"

    def test_serve_answers_alive(self):
        port = free_port()
        process = subprocess.Popen(
            [*self.command, "serve", "--no-auth", "--port", str(port), "--log-level", "warning"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            body = self._wait_for_alive(port, process)
        finally:
            process.terminate()
            try:
                _out, err = process.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                _out, err = process.communicate()
        assert isinstance(body, dict)
        assert "Traceback" not in err

    @staticmethod
    def _wait_for_alive(port: int, process: subprocess.Popen) -> object:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                stderr = process.stderr.read() if process.stderr else ""
                pytest.fail(f"serve exited early with {process.returncode}: {stderr}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/alive", timeout=2) as reply:
                    assert reply.status == 200
                    return json.loads(reply.read())
            except OSError:
                time.sleep(0.2)
        pytest.fail("serve did not answer /alive within 60 s")

    def test_export_then_import_into_another_data_folder(self, tmp_path):
        from desktop_agent.store import Store

        source_dir, target_dir = tmp_path / "source", tmp_path / "target"
        source_dir.mkdir()
        with Store.open(source_dir / "conversations.sqlite3") as store:
            conversation = store.create_conversation(title="Packing list for Lisbon")
            store.add_message(conversation.id, {"role": "user", "content": "What should I pack?"})
            store.add_message(conversation.id, {"role": "assistant", "content": "Sunscreen."})

        exported = tmp_path / "export.json"
        result = self.run(
            "export", "--all", "-o", str(exported),
            "--database", str(source_dir / "conversations.sqlite3"),
        )
        assert result.returncode == 0, result.stderr
        assert "Sunscreen." in exported.read_text(encoding="utf-8")

        env = {"DESKTOP_AGENT_DATA_DIR": str(target_dir)}
        result = self.run("import", str(exported), env=env)
        assert result.returncode == 0, result.stderr
        listing = self.run("export", "--list", env=env)
        assert listing.returncode == 0, listing.stderr
        assert "Packing list for Lisbon" in listing.stdout

    def test_import_resets_unsafe_and_removes_invalid_settings_in_words(self, tmp_path):
        # A crafted export: confirmation off, and values the app's settings schema refuses.
        from desktop_agent.store import Store

        source = tmp_path / "source.sqlite3"
        with Store.open(source) as store:
            store.create_conversation(title="Crafted", settings={"model": "m"})
        exported = tmp_path / "export.json"
        assert self.run("export", "--all", "-o", str(exported),
                        "--database", str(source)).returncode == 0
        document = json.loads(exported.read_text(encoding="utf-8"))
        document["conversations"][0]["settings"].update(
            {"confirm_tools": False, "temperature": 5, "max_tool_iterations": 500})
        exported.write_text(json.dumps(document), encoding="utf-8")

        target = tmp_path / "target"
        result = self.run("import", str(exported), env={"DESKTOP_AGENT_DATA_DIR": str(target)})
        assert result.returncode == 0, result.stderr
        assert "Reset for safety: 'Crafted': confirmation of tool calls was off" in result.stderr
        assert "Removed:" in result.stderr and "max_tool_iterations, temperature" in result.stderr
        assert "Traceback" not in result.stderr
        with Store.open(target / "conversations.sqlite3") as store:
            settings = store.list_conversations()[0].settings
        assert settings == {"model": "m"}

    def test_import_of_a_broken_file_explains_and_imports_nothing(self, tmp_path):
        broken = tmp_path / "broken.json"
        broken.write_text("{not json", encoding="utf-8")
        env = {"DESKTOP_AGENT_DATA_DIR": str(tmp_path / "data")}
        result = self.run("import", str(broken), env=env)
        assert result.returncode != 0
        assert "Traceback" not in result.stderr
        assert result.stderr.strip()
        assert "No conversations yet." in self.run("export", "--list", env=env).stdout


def installed_command() -> list[str] | None:
    """The console script next to the running interpreter, or on PATH."""
    beside = Path(sys.executable).with_name("desktop-agent")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("desktop-agent")
    return [found] if found else None


class TestInstalledEntryPoint(EntryPointChecks):
    @pytest.fixture(autouse=True)
    def _command(self):
        command = installed_command()
        if command is None:
            part_missing("the desktop-agent command is not installed (pip install -e .)")
        self.command = command


def modules_loaded_by(args: list[str]) -> set[str]:
    """Run ``main(args)`` in a fresh interpreter and return the heavy modules it imported."""
    code = (
        "import sys\n"
        "from desktop_agent.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('loaded:' + ','.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    last_line = result.stdout.strip().splitlines()[-1]
    assert last_line.startswith("loaded:"), result.stdout
    return set(filter(None, last_line.removeprefix("loaded:").split(",")))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["serve", "--help"]])
def test_quick_commands_import_no_qt_openai_or_fastapi(args):
    assert modules_loaded_by(args) == set()


def test_importing_the_window_module_loads_nothing_a_conversation_needs():
    code = (
        "import sys\n"
        "import desktop_agent.gui.app\n"
        "print(','.join(sorted(m for m in ('openai','aiohttp','fastapi','mcp','tiktoken',"
        "'uvicorn')"
        " if m in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""

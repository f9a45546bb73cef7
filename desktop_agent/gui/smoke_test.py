"""``desktop-agent --smoke-test``: prove the installed app (or frozen binary) works.

Opens the real main window over a throw-away data folder, runs one scripted
turn against a :class:`~desktop_agent.testing.ScriptedServer` started for the
purpose: the model calls a tool, the approval dock is answered
programmatically (Allow once), the tool runs, its result reaches the model,
and the final answer reaches the transcript. Exit status 0 only if every step
worked; otherwise the traceback is printed and the status is 1.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import traceback
from typing import Any

#: The whole test on an idle machine (stretched like the steps' waits).
SMOKE_TIMEOUT = 60.0
#: One step's wait on an idle machine; stretched by the machine's load (see _wait_for).
STEP_TIMEOUT = 20.0
FINAL_ANSWER = "The smoke test tool answered: pong."


class SmokeTestFailure(AssertionError):
    """A step of the smoke test did not do what it should."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeTestFailure(message)


class MachineLoad:
    """How much to stretch the waits: measured at the start, again when a wait runs out.

    Why: the waits are written for an idle machine, and a step that is only
    slow on a busy one (another build, another test run) must not fail. As the
    llama.cpp tests stretch theirs by the server's speed, these are stretched by
    how much less of a core the app gets
    (:func:`~desktop_agent.testing.machine_load.busy_factor`).
    """

    def __init__(self) -> None:
        from desktop_agent.testing.machine_load import busy_factor

        self.factor = busy_factor()

    def stretched(self, seconds: float) -> float:
        """``seconds`` for an idle machine, as long as the load seen so far asks."""
        from desktop_agent.testing.machine_load import stretched

        return stretched(seconds, self.factor)

    def look_again(self) -> None:
        """Measure once more (the machine may have got busier since)."""
        from desktop_agent.testing.machine_load import busy_factor

        self.factor = max(self.factor, busy_factor())


async def _wait_for(condition: Any, what: str, load: MachineLoad,
                    timeout: float = STEP_TIMEOUT) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not condition():
        if loop.time() - started > load.stretched(timeout):
            load.look_again()
            if loop.time() - started > load.stretched(timeout):
                raise SmokeTestFailure(
                    f"timed out waiting for {what} ({load.stretched(timeout):.0f} s: "
                    f"{timeout:.0f} s stretched \u00d7{load.factor:.1f} for this machine's load)")
        await asyncio.sleep(0.02)


def _check_look() -> None:
    """The bundled SVG icons render (QtSvg and its plugins shipped) and the stylesheet exists."""
    from PySide6.QtGui import QImage

    from desktop_agent.appdata.resource_files import resource_path
    from desktop_agent.gui.icons import icon

    pixmap = icon("send").pixmap(24, 24)
    image = pixmap.toImage().convertToFormat(QImage.Format.Format_ARGB32)
    drawn = any(image.pixelColor(x, y).alpha() > 0 for x in range(24) for y in range(24))
    _check(drawn, "the bundled Lucide icons do not render (QtSvg or the .svg files missing)")
    _check(resource_path("theme.qss").is_file(), "resources/theme.qss is missing")


def _check_builtin_tools() -> None:
    """The built-in tools describe themselves to the model (their texts survive the build).

    The binary's bytecode is built without docstrings (build.spec) except for the
    modules that read theirs at run time, such as the built-in tools'.
    """
    from desktop_agent.core.tooling.builtin import builtin_tools

    with tempfile.TemporaryDirectory(prefix="desktop-agent-smoke-tools-") as folder:
        tools = builtin_tools(folder)
    _check(len(tools) >= 7, f"only {len(tools)} built-in tools")
    for made in tools:
        _check(len(made.description) > len(made.name) and made.description != made.name,
               f"the built-in tool {made.name} has no description: {made.description!r}")


def _transcript_text(window: Any) -> str:
    """What the current tab's transcript shows (the words of an error the turn met)."""
    tab = window.current_tab()
    if tab is None:
        return ""
    tab.transcript.flush()
    return " | ".join(tab.transcript.item_text(k) for k in tab.transcript.item_keys())[-1500:]


async def _run(app: Any, load: MachineLoad) -> None:
    from desktop_agent.core.tooling.tools import tool
    from desktop_agent.gui.window.main_window import MainWindow
    from desktop_agent.session import ToolCatalog
    from desktop_agent.store import Store
    from desktop_agent.testing import ScriptedServer, script

    _check_look()
    _check_builtin_tools()
    received: list[dict[str, Any]] = []

    @tool("smoke_ping", "Answers pong", {"message": str})  # type: ignore[untyped-decorator]
    async def smoke_ping(args: dict[str, Any]) -> str:
        received.append(dict(args))
        return "pong"

    with ScriptedServer() as server:
        server.enqueue(script.tool_calls([("smoke_ping", {"message": "ping"})]),
                       script.text(FINAL_ANSWER, pieces=6))
        store = Store.open()
        window = MainWindow(store, tools=ToolCatalog([smoke_ping], include_builtin=False),
                            approval_timeout=30.0, discover_on_start=False)
        try:
            window.show()
            app.processEvents()
            controller = window.current_controller() or window.new_conversation()
            window.servers.use_server(controller, server.base_url, "test-model")
            _check(controller.send("Run the smoke test"), "the message was not accepted")
            try:
                await _wait_for(lambda: bool(window.approvals.pending()),
                                "the approval request", load)
            except SmokeTestFailure as exc:
                raise SmokeTestFailure(f"{exc}; the transcript shows: "
                                       f"{_transcript_text(window)!r}") from None
            request = window.approval_dock.current_request()
            _check(request is not None and request.tool_name == "smoke_ping",
                   f"the dock shows the wrong request: {request}")
            _check(window.approval_dock.allow_once(), "the dock did not accept Allow once")
            await _wait_for(lambda: not controller.busy, "the end of the turn", load)
            _check(received == [{"message": "ping"}], f"the tool received {received}")
            _check(len(server.requests) == 2, f"{len(server.requests)} requests, expected 2")
            tool_results = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
            _check(bool(tool_results) and tool_results[0]["content"] == "pong",
                   f"the model did not get the tool result: {tool_results}")
            tab = window.current_tab()
            if tab is None:
                raise SmokeTestFailure("no tab is open")
            tab.transcript.flush()
            shown = " ".join(tab.transcript.item_text(k) for k in tab.transcript.item_keys())
            _check(FINAL_ANSWER in shown, f"the transcript shows {shown!r}")
            stored = [m["role"] for m in controller.stored_messages()]
            _check(stored == ["user", "assistant", "tool", "assistant"],
                   f"the store holds {stored}")
        finally:
            window.close()
            await window.shutdown()
            store.close()


def run_smoke_test() -> int:
    """Run the smoke test; 0 when every step worked, 1 (with the traceback) otherwise."""
    previous = os.environ.get("DESKTOP_AGENT_DATA_DIR")
    with tempfile.TemporaryDirectory(prefix="desktop-agent-smoke-") as folder:
        os.environ["DESKTOP_AGENT_DATA_DIR"] = folder
        try:
            from desktop_agent.gui.app import prepare_imports

            prepare_imports()  # as the window does: the turn runs on the SDK the app imports
            from PySide6.QtWidgets import QApplication

            existing = QApplication.instance()
            app = existing if isinstance(existing, QApplication) else \
                QApplication(sys.argv[:1])
            app.setQuitOnLastWindowClosed(False)  # the loop ends when the test ends
            from desktop_agent.gui.app import finalize_async_generators_on
            from desktop_agent.gui.event_loop import GuiEventLoop
            from desktop_agent.testing.machine_load import MOST, stretched

            load = MachineLoad()
            loop = GuiEventLoop(app)
            asyncio.set_event_loop(loop)
            with loop, finalize_async_generators_on(loop):
                # A last resort (each step's own wait says what it waited for): the test
                # ends whatever happens, but never before a step stretched to the most.
                loop.run_until_complete(asyncio.wait_for(_run(app, load),
                                                         stretched(SMOKE_TIMEOUT, MOST)))
        except BaseException:  # noqa: BLE001 - the smoke test reports any failure as exit 1
            traceback.print_exc()
            return 1
        finally:
            if previous is None:
                os.environ.pop("DESKTOP_AGENT_DATA_DIR", None)
            else:
                os.environ["DESKTOP_AGENT_DATA_DIR"] = previous
    sys.stdout.write("smoke test passed: window, scripted turn, tool approval, transcript, "
                     f"store (waits stretched \u00d7{load.factor:.1f} for this machine's load)\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_smoke_test())

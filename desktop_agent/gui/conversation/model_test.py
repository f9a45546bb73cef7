"""*Test this model* in Conversation settings: run the tool-call probe and show what it measured."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.gui.conversation.settings_dialog import ConversationSettingsDialog
    from desktop_agent.store import Store


def wire_model_test(dialog: ConversationSettingsDialog, controller: ConversationController,
                    store: Store, track: Callable[[asyncio.Future[Any]], Any]) -> None:
    """Show the kept result, run the probe on a click, follow a background run that ends.

    ``track`` keeps the window's reference to each task it starts (cancelled on close).
    """
    from desktop_agent.session import probe_summary, tool_call_mode_for

    async def show_kept() -> None:
        result = await asyncio.to_thread(probe_summary, controller.settings, store)
        with contextlib.suppress(RuntimeError):  # the dialog may be gone
            dialog.show_probe_result(result)

    async def show_mode() -> None:
        mode = await tool_call_mode_for(controller.settings, store)
        with contextlib.suppress(RuntimeError):
            dialog.show_tool_call_mode(mode)

    async def run() -> None:
        from desktop_agent.gui.conversation.error_messages import describe_error

        dialog.show_probe_running()
        try:
            result = await controller.session.test_model()
        except Exception as exc:  # noqa: BLE001 - a sentence for the person, not a crash
            with contextlib.suppress(RuntimeError):
                dialog.show_probe_error(describe_error(exc).sentence)
            return
        with contextlib.suppress(RuntimeError):
            dialog.show_probe_result(result)
        await show_mode()

    def probed(event: Any) -> None:  # a background probe ended while the dialog is open
        if event.model == controller.settings.get("model"):
            with contextlib.suppress(RuntimeError):
                dialog.show_probe_result(event.result)
                dialog.show_tool_call_mode_text(event.mode)

    track(asyncio.ensure_future(show_kept()))
    dialog.test_model_requested.connect(lambda: track(asyncio.ensure_future(run())))
    controller.tool_call_probed.connect(probed)
    dialog.finished.connect(lambda _code: _disconnect(controller, probed))


def _disconnect(controller: ConversationController, slot: Callable[[Any], None]) -> None:
    with contextlib.suppress(RuntimeError, TypeError):
        controller.tool_call_probed.disconnect(slot)

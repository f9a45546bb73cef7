"""Open a conversation's settings dialog and fill in what takes a moment to learn.

The dialog opens at once with what the conversation already holds; what needs the
model's server, the tokenizer or the disk (the tool-call mode, the context window, the
project instructions' tokens, the command previews' status, the skills) arrives from
tasks on the event loop and is shown when known, unless the dialog was closed first.
Imported when the person first opens the settings: an idle window has no dialog.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from desktop_agent.gui.conversation.model_test import wire_model_test
from desktop_agent.gui.conversation.settings_dialog import ConversationSettingsDialog

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from desktop_agent.gui.conversation.conversation_controller import ConversationController
    from desktop_agent.session import ToolCatalog
    from desktop_agent.store import Store


def open_conversation_settings(parent: QWidget, controller: ConversationController,
                               tools: ToolCatalog, store: Store,
                               track: Callable[[asyncio.Future[Any]], None],
                               ) -> ConversationSettingsDialog:
    """Open ``controller``'s settings (non-modal) over ``parent``; ``track`` keeps its tasks."""
    instructions = controller.project_instructions()
    dialog = ConversationSettingsDialog(controller.title, controller.settings,
                                        tools.tool_names(), parent,
                                        schema_costs=tools.schema_costs(),
                                        instructions=instructions)
    if instructions is not None:  # the tokenizer may load: off the GUI thread
        async def count() -> None:
            tokens = await asyncio.to_thread(instructions.tokens)
            with contextlib.suppress(RuntimeError):  # the dialog may be gone
                dialog.context_box.show_instruction_tokens(tokens)

        track(asyncio.ensure_future(count()))

    async def tell_mode() -> None:  # may ask the model's server: off the dialog's path
        from desktop_agent.session import tool_call_mode_for

        mode = await tool_call_mode_for(controller.settings, store)
        with contextlib.suppress(RuntimeError):  # the dialog may be gone
            dialog.show_tool_call_mode(mode)

    track(asyncio.ensure_future(tell_mode()))
    wire_model_test(dialog, controller, store, track)

    async def tell_previews() -> None:  # a trial preview the first time: off the GUI thread
        from desktop_agent.session import preview_status

        status = await asyncio.to_thread(preview_status, controller.settings)
        with contextlib.suppress(RuntimeError):  # the dialog may be gone
            dialog.commands_box.show_status(status)

    track(asyncio.ensure_future(tell_previews()))

    async def tell_window() -> None:  # asks the model's server too
        from desktop_agent.session import context_window_for

        window = await context_window_for(controller.settings)
        with contextlib.suppress(RuntimeError):  # the dialog may be gone
            dialog.show_context_window(window)

    track(asyncio.ensure_future(tell_window()))

    async def tell_skills() -> None:  # reads the skill folders and counts: off the GUI thread
        try:
            listing = await asyncio.to_thread(controller.session.skill_listing)
        except OSError as exc:
            with contextlib.suppress(RuntimeError):
                dialog.skills_box.show_problem(f"The skills could not be read: {exc}")
            return
        with contextlib.suppress(RuntimeError):  # the dialog may be gone
            dialog.skills_box.show_listing(listing)

    track(asyncio.ensure_future(tell_skills()))
    dialog.applied.connect(lambda changes: controller.update_settings(**changes))
    dialog.conversation_approval_revoked.connect(controller.revoke_conversation_approval)
    dialog.finished.connect(dialog.deleteLater)
    dialog.open()
    return dialog

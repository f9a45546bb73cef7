"""The streaming transcript of one conversation (the design is explained in ``view.py``).

The window embeds :class:`TranscriptView` and drives it with::

    view.clear()
    key = view.add_user_message(text, message_id=None)
    key = view.begin_assistant_message(message_id=None)
    view.append_text(delta); view.append_thinking(delta)       # O(1); shown per frame
    view.add_tool_call(tool_use_id, name, input, source=None)
    view.set_tool_result(tool_use_id, content, is_error=False)
    view.add_tool_error(text, tool_use_id=None)
    view.end_assistant_message(interrupted=False)
    key = view.add_error(text, retry=True)
    view.load_messages(stored_messages)                        # dicts or MessageRecords
    view.follows_end; view.scroll_to_end(); view.flush()

Signals: ``retry_requested()``, ``edit_requested(key, new_text)``,
``regenerate_requested()``, ``copy_requested(text)``, ``follows_end_changed(bool)``.

The view loads on first use (PEP 562): the window imports the frame scheduler, the
transcript's theme and the approval panel's argument parser from this package before
its first paint, and the view (with the stored-items reader and the session behind it)
is built only after that paint (``MainWindow(tabs_after_paint=True)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports

__all__ = ["TranscriptView"]

if TYPE_CHECKING:
    from desktop_agent.gui.transcript.view import TranscriptView

__getattr__ = lazy_exports(__name__, {"TranscriptView": "view"})

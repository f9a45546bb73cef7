"""Widgets made and dropped every turn leave nothing of their signal connections behind.

Why: PySide keeps a little of each Python callable connected to a widget's signal (a
bound ``emit``, a lambda) after the widget is deleted. The transcript makes a user
bubble, an answer and a code block widget per block anew for every turn and drops them
as the conversation goes on, and a header's model menu is filled again after every turn:
with their signals forwarded through ``emit`` that was ~0.1 KB a connection, ~30 a
turn, for the life of the window. Forwarded signal to signal, Qt keeps nothing.
"""

from __future__ import annotations

import tracemalloc
from types import SimpleNamespace

from PySide6.QtCore import QCoreApplication, QEvent

from desktop_agent.gui.conversation.conversation_header import ConversationHeader
from tests.gui.transcript.test_transcript_memory import live, turn

WIDGET_MAKERS = ("item_widgets.py", "assistant_message.py", "conversation_header.py")


def held_by_widget_makers(snapshot: tracemalloc.Snapshot) -> int:
    """Bytes still held that were allocated on a line of the modules that make the widgets."""
    return sum(stat.size for stat in snapshot.statistics("filename")
               if stat.traceback[0].filename.endswith(WIDGET_MAKERS))


def test_answers_dropped_as_the_conversation_goes_on_leave_their_connections_behind_not(
        view, qtbot):
    from desktop_agent.gui.transcript.assistant_message import AssistantMessageWidget

    tracemalloc.start()  # before the first widgets: the live ones are in both snapshots
    try:
        for index in range(20):  # the view keeps a few screens of widgets; older ones go
            turn(view, qtbot, index, sections=3)
        before = held_by_widget_makers(tracemalloc.take_snapshot())
        for index in range(20, 80):
            turn(view, qtbot, index, sections=3)
        assert live(AssistantMessageWidget) <= 20  # 60 more answers made, most dropped
        grown = held_by_widget_makers(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()
    # 60 turns made ~60 user bubbles, 60 answers and 180 code blocks: forwarded through
    # ``emit`` they left ~58 KB behind; the few widgets alive at each end are the same count.
    assert grown < 8 * 1024


def test_the_model_menu_filled_after_every_turn_leaves_nothing_behind(qtbot):
    header = ConversationHeader()
    qtbot.addWidget(header)
    server = SimpleNamespace(name="Scripted", base_url="http://127.0.0.1:1/v1", up=True,
                             models=[SimpleNamespace(id="soak-model", context_length=8192)])
    tracemalloc.start()
    try:
        for _ in range(20):
            header.set_servers([server])
        before = held_by_widget_makers(tracemalloc.take_snapshot())
        for _ in range(500):  # what a window does after each of 500 turns
            header.set_servers([server])
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        grown = held_by_widget_makers(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()
    assert grown < 8 * 1024  # a callable per action kept ~78 KB over 500 fillings

    # The menu still does what it says.
    chosen: list[tuple] = []
    header.model_chosen.connect(lambda *args: chosen.append(args))
    added: list[bool] = []
    header.add_server_requested.connect(lambda: added.append(True))
    actions = {action.text(): action for action in header.model_menu.actions()}
    actions["soak-model"].trigger()
    actions["Add server…"].trigger()
    assert chosen == [("http://127.0.0.1:1/v1", "soak-model", 8192)]
    assert added == [True]

"""Arguments edited on a tool card: kept on the request, their diff worked out again.

The card's panel reports each valid edit; this part gives it to the approval
queue (one edit per request, which the dock shows too and either answer runs)
and, for a file call, asks the session for the diff of the edited call after
a pause in the typing, as the dock does for its own edits.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer

from desktop_agent.gui.transcript.approval_panel import ApprovalPrompt

if TYPE_CHECKING:
    from desktop_agent.gui.approvals.approval_queue import ApprovalQueue, ApprovalRequest

log = logging.getLogger("desktop_agent.gui.card_edits")

#: Quiet time after the last key before the edited call's diff is worked out (as the dock).
PREVIEW_DELAY_MS = 400


def card_prompt(request: ApprovalRequest) -> ApprovalPrompt:
    """What a request's card asks with: its countdown, its answers, the arguments Allow runs."""
    edited = request.edited_input is not None
    shown = request.edited_input if edited else request.tool_input
    return ApprovalPrompt(deadline=request.deadline, can_remember=request.can_remember,
                          unsandboxed=request.unsandboxed,
                          arguments=json.dumps(shown, indent=2, ensure_ascii=False),
                          edited=edited, can_preview=request.can_preview,
                          plan=request.is_plan, agent=request.agent)


class CardEdits(QObject):
    """Takes a tab's card edits to the approval queue (and their diffs to the card).

    Args:
        queue: The approval queue (None: the tab asks nobody).
        requests: The tab's requests waiting on their cards, by tool use id.
    """

    def __init__(self, queue: ApprovalQueue | None, requests: dict[str, ApprovalRequest],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._queue = queue
        self._requests = requests
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self._preview)
        self._latest: ApprovalRequest | None = None
        self._task: asyncio.Future[Any] | None = None

    def edit(self, tool_use_id: str, text: str) -> None:
        """The arguments of ``tool_use_id``'s card now read ``text`` (valid JSON)."""
        request = self._requests.get(tool_use_id)
        if request is None or self._queue is None or not request.pending:
            return
        self._queue.edit(request, json.loads(text))
        if request.previewer is not None:
            self._latest = request
            self._timer.start()

    def _preview(self) -> None:
        request, queue = self._latest, self._queue
        if request is None or queue is None or request.previewer is None \
                or not request.pending:
            return
        if self._task is not None:
            self._task.cancel()  # a newer edit replaces it
        arguments = request.edited_input if request.edited_input is not None \
            else request.tool_input
        task = asyncio.ensure_future(request.previewer(arguments))
        self._task = task

        def shown(done: asyncio.Future[Any]) -> None:
            if done.cancelled() or done.exception() is not None:
                return
            preview = done.result()
            if preview is None:
                log.info("no diff for the edited arguments of %s", request.tool_name)
            else:
                queue.set_preview(request, preview)  # the card (and the dock) show it

        task.add_done_callback(shown)

"""The model's plan as the tab's plan panel shows it, read without stalling the window.

The plan is the last ``update_plan`` call of the active branch. The page of
the branch the transcript shows usually holds it; a long conversation whose
plan was set before that page gets it from the whole branch, read in a
worker thread, and told when it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from desktop_agent.session import plan_of

if TYPE_CHECKING:
    from desktop_agent.session import ConversationSession, Plan
    from desktop_agent.store import MessageRecord


class BranchPlan:
    """Finds one conversation's plan (no Qt: it tells ``found``).

    Args:
        session: The conversation's session.
        found: Called with the plan read from the whole branch, when there is one.
    """

    def __init__(self, session: ConversationSession, found: Callable[[Plan], None]) -> None:
        self._session = session
        self._found = found
        self._task: asyncio.Future[None] | None = None

    def on_page(self, page: list[MessageRecord]) -> Plan | None:
        """The plan on ``page``, the one the transcript shows (None: none there).

        The page is the one the transcript read, not read again: on a long
        conversation each read of it is a walk up the tree and ~200 rows decoded.
        When the page holds no plan and starts after the root, the whole branch is
        read for it in a worker thread.
        """
        found = plan_of(page)
        if found is None and page and page[0].parent_id is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: the page must do
                asyncio.get_running_loop()
                if self._task is None or self._task.done():
                    self._task = asyncio.ensure_future(self._from_branch())
        return found

    def cancel(self) -> None:
        """Stop reading the branch (the conversation closes)."""
        if self._task is not None:
            self._task.cancel()

    async def _from_branch(self) -> None:
        found = plan_of(await asyncio.to_thread(self._session.read_branch))
        if found is not None:
            self._found(found)

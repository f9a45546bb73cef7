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


class BranchPlan:
    """Finds one conversation's plan (no Qt: it tells ``found``).

    Args:
        session: The conversation's session.
        page: How many messages the transcript's last page holds.
        found: Called with the plan read from the whole branch, when there is one.
    """

    def __init__(self, session: ConversationSession, page: int,
                 found: Callable[[Plan], None]) -> None:
        self._session = session
        self._page = page
        self._found = found
        self._task: asyncio.Future[None] | None = None

    def current(self) -> Plan | None:
        """The plan on the page shown (None: none there; the whole branch is read then)."""
        page = self._session.latest_page(self._page)
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

"""``@server:name`` in the composer: the MCP servers' resources offered beside the files.

The listing comes from the conversation's session (``mcp_resources``), kept as
a :class:`ResourceIndex` and listed again when older than
:data:`~.file_mentions.REFRESH_SECONDS`, as the folder is. A chosen resource is
read through the session (``attach_resource``, which also subscribes to its
changes) and becomes an attachment by :func:`~.attachments.resource_attachment`;
a template first asks for its parameters (:class:`~.template_form.TemplateForm`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from desktop_agent.gui.conversation.attachments import Attachment, resource_attachment
from desktop_agent.gui.loop_work import OwnedTasks

if TYPE_CHECKING:
    from desktop_agent.core.tooling.mcp.mcp_items import McpResource, McpResourceTemplate

log = logging.getLogger("desktop_agent.gui.resource_mentions")

Listing = Callable[[], Awaitable[tuple[list["McpResource"], list["McpResourceTemplate"]]]]
#: Rows offered at most for resources (files have the rest of the list).
SHOWN = 20


@dataclass
class ResourceIndex:
    """The resources and templates of the MCP servers as last listed.

    Rows read ``server:name`` (a template's with ``…``: it asks for its parameters).
    """

    items: dict[str, McpResource | McpResourceTemplate] = field(default_factory=dict)
    listed_at: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, resources: list[McpResource], templates: list[McpResourceTemplate],
           ) -> ResourceIndex:
        items: dict[str, McpResource | McpResourceTemplate] = {}
        for resource in resources:
            items.setdefault(f"{resource.server}:{resource.name}", resource)
        for template in templates:
            items.setdefault(f"{template.server}:{template.name}…", template)
        return cls(items)

    def age(self) -> float:
        """Seconds since the servers were asked."""
        return time.monotonic() - self.listed_at

    def servers(self) -> set[str]:
        """The servers that offer something."""
        return {item.server for item in self.items.values()}

    def matches(self, query: str, limit: int = SHOWN) -> list[str]:
        """The rows holding ``query``'s characters in order, best first."""
        from desktop_agent.workspace.file_index import fuzzy_matches  # loaded with the files'

        return fuzzy_matches(query, list(self.items), limit)

    def first_for(self, query: str) -> bool:
        """Whether ``query`` names a server (``ev…`` or ``ev:…``): then resources lead."""
        head = query.split(":", 1)[0].lower()
        return ":" in query or (bool(head) and any(s.lower().startswith(head)
                                                   for s in self.servers()))


class ResourceAttaching(QObject):
    """Reads a chosen resource through the session and hands its attachments on.

    Args:
        parent: The conversation page (the template form's parent).
        session: The conversation's session (``attach_resource``, ``complete_argument``).
        attach: Takes the attachments made.
        problem: Takes a sentence when a resource cannot be read.
    """

    def __init__(self, parent: QWidget, session: Any,
                 attach: Callable[[list[Attachment]], None],
                 problem: Callable[[str], None]) -> None:
        super().__init__(parent)
        self._page = parent
        self._session = session
        self._attach = attach
        self._problem = problem
        self._tasks = OwnedTasks()
        self.form: Any = None  # the open template form, if any

    def _run(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.start(work)

    def busy(self) -> bool:
        """Whether a resource is being read."""
        return self._tasks.busy()

    def choose(self, item: object) -> None:
        """A row of the ``@`` list was chosen: read a resource, or ask a template's values."""
        from desktop_agent.core.tooling.mcp.mcp_items import McpResource, McpResourceTemplate

        if isinstance(item, McpResource):
            self.attach(item.server, item.uri)
        elif isinstance(item, McpResourceTemplate):
            self.ask(item)

    def ask(self, template: McpResourceTemplate) -> None:
        """Open the template's form; its URI is read when the person confirms."""
        from desktop_agent.gui.conversation.template_form import TemplateForm

        if self.form is not None:
            with contextlib.suppress(RuntimeError):
                self.form.close()
        form = TemplateForm(template, self._session.complete_argument, self._page)
        form.chosen.connect(lambda uri: self.attach(
            template.server, uri, f"{template.name} {' '.join(form.values().values())}"))
        form.finished.connect(form.deleteLater)
        self.form = form
        form.open()

    def attach(self, server: str, uri: str, label: str | None = None) -> None:
        """Read ``uri`` of ``server`` and attach what it holds (named ``label`` if given)."""
        async def read() -> None:
            from desktop_agent.core.errors import AgentError
            from desktop_agent.session import NoMcpServers

            try:
                contents = await self._session.attach_resource(server, uri)
            except (NoMcpServers, AgentError) as exc:
                self._problem(f"{uri} could not be attached: {exc}")
                return
            if not contents:
                self._problem(f"{uri} is empty: the server returned nothing to attach.")
                return
            with contextlib.suppress(RuntimeError):  # the page may be closed meanwhile
                self._attach([resource_attachment(server, c, label) for c in contents])

        self._run(read())

    def cancel(self) -> None:
        """Stop reading (the page closes)."""
        self._tasks.cancel()

"""The desktop window: widgets, and one controller per conversation.

Widgets lay things out and emit signals; controllers decide. Heavy modules
(the HTTP stack, MCP, the REST server) are imported only after the window has
painted, so importing this package stays cheap.

By job:

- this package: the app (``app``, ``event_loop``, ``error_sink``,
  ``single_instance``, ``smoke_test``) and the look (``theme``, ``palette``,
  ``icons``);
- ``window``: the main window and what it owns (menus, sidebar, Preferences,
  saving and restoring, import and export);
- ``conversation``: one conversation on screen (controller, tab, header,
  composer, status line, settings dialog);
- ``approvals``: the approval queue, dock, gate and badges;
- ``servers``: the server catalog, the picker and applying a choice;
- ``transcript``: the streaming transcript view and its widgets.
"""

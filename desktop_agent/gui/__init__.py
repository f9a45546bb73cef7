"""The desktop window: widgets, and one controller per conversation.

Widgets lay things out and emit signals; controllers decide. Heavy modules
(the openai SDK, MCP, the REST server) are imported only after the window has
painted, so importing this package stays cheap.
"""

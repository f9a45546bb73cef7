"""The main window and what it owns: menus, sidebar, Preferences, state, transfer.

Also the window's side of approvals (badges and the dock across tabs) and of
servers (applying a server and model choice to the open tabs).
"""

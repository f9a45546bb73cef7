"""The main window and what it owns: menus, sidebar, Preferences, state, transfer."""

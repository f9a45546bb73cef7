"""App infrastructure under every layer: the data folder, the keyring, bundled resources.

The only package that knows where the app keeps its files and how it names
secrets at rest; nothing here imports the core, the store, the session layer or
a front end (import-linter checks it).
"""

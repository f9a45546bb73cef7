"""A conversation's files: what a call changes, the folder's checkpoints, undo and restore.

Also the working folder's ``AGENTS.md``, which each turn's system prompt may
carry. Nothing is re-exported here: the checkpoint and diff modules are loaded
only when a turn, an undo or the files panel needs them.
"""

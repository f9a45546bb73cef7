"""A conversation's files: what a call changes, the folder's checkpoints, undo and restore.

Nothing is re-exported here: the checkpoint and diff modules are loaded only
when a turn, an undo or the files panel needs them.
"""

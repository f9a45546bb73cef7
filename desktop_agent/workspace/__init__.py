"""Qt-free work on a conversation's working folder: diffs of files (and checkpoints).

The session layer uses this package to show a file change before it is allowed
and to record what changed after; the window and the REST server only read the
results (through ``session``), so both show the same diff.
"""

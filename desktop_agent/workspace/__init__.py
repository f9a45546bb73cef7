"""Qt-free work on a conversation's working folder: diffs of files and checkpoints.

The session layer uses this package to show a file change before it is allowed,
to record what changed after, and to undo a turn or restore files to a point;
the window and the REST server only read the results (through ``session``), so
both show the same diff. It knows no conversation, no store and no front end.
"""

"""A conversation's settings: the schema, their defaults and meaning, the record and its patches.

Nothing is re-exported here: the schema pulls in pydantic, which the window
loads only when settings are saved or checked.
"""

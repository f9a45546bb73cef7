"""A conversation's settings: schema, defaults, meaning, its own rules, the record, its patches.

Nothing is re-exported here: the schema pulls in pydantic, which the window
loads only when settings are saved or checked.
"""

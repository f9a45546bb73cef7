"""The wire: requests to a model server and the reply's bytes turned into blocks.

Transport and connection pool, the retry policy, the request body, SSE lines,
the reply reader with its stream guards, chunks to blocks, tool calls written
as text, and usage figures. Nothing here runs a tool or keeps a history.
"""

"""The wire: requests to a model server and the reply's bytes turned into blocks.

Transport and connection pool, the retry policy, SSE lines, the reply reader
with its stream guards, chunks to blocks, tool calls written as text or held to
a constrained reply's shape, and usage figures. What a request holds is decided
above it (``core/request_build.py`` draws on the tools and the context); nothing
here runs a tool or keeps a history.
"""

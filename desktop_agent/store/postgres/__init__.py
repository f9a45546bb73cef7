"""The store's PostgreSQL engine, for several ``desktop-agent serve`` replicas on one database.

Imported only when a ``postgresql://`` URL is opened, so the desktop and a single
``serve`` on SQLite never load the driver (``psycopg``, the ``postgres`` extra).
"""

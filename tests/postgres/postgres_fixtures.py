"""Pytest plugin: a real PostgreSQL cluster for the tiers that run on both engines.

``tests/conftest.py`` registers this module (``pytest_plugins``), so any tier may ask
for ``postgres_cluster`` (one private cluster per session, see
:mod:`postgres.postgres_cluster`) or ``postgres_url`` (a fresh empty database on it per
test). Where PostgreSQL or its driver is missing the test is skipped locally with the
install command, and fails in CI (``CI`` set), where a tier that cannot start
PostgreSQL must not pass by skipping.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tier_policy import part_missing, require_module

from .postgres_cluster import PostgresCluster, PostgresUnavailable, start_cluster


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One private PostgreSQL cluster for the session, stopped and removed at the end."""
    require_module("psycopg", "pip install -e '.[test]'")
    try:
        cluster = start_cluster()
    except PostgresUnavailable as exc:
        part_missing(str(exc))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """``postgresql://user:pass@127.0.0.1:port/db`` of a new empty database for this test."""
    return postgres_cluster.create_database()

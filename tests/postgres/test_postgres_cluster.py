"""The private PostgreSQL cluster the PostgreSQL tier runs on: real, private, unprivileged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from postgres.postgres_cluster import SUPERUSER, PostgresCluster
from tier_policy import require_module

require_module("psycopg")  # skips the module locally; fails its collection in CI

import psycopg  # noqa: E402


def test_the_cluster_answers_sql_over_tcp_with_a_password(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()
        address = conn.execute("SELECT inet_server_addr()::text").fetchone()
    assert version is not None and int(version[0]) >= 130000
    assert address is not None and address[0].startswith("127.0.0.1")


def test_a_wrong_password_is_refused(postgres_cluster: PostgresCluster) -> None:
    url = postgres_cluster.url().replace(postgres_cluster.password, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(url).close()


def test_the_server_runs_unprivileged_in_its_own_temporary_folder(
    postgres_cluster: PostgresCluster,
) -> None:
    pid = int((postgres_cluster.data_dir / "postmaster.pid").read_text().split()[0])
    status = Path(f"/proc/{pid}/status").read_text()
    real_uid = int(next(line for line in status.splitlines()
                        if line.startswith("Uid:")).split()[1])
    assert real_uid != 0
    if os.geteuid() != 0:
        assert real_uid == os.geteuid()
    assert not str(postgres_cluster.folder).startswith("/var/lib/postgresql")


def test_each_test_gets_its_own_empty_database(postgres_cluster: PostgresCluster) -> None:
    first, second = postgres_cluster.create_database(), postgres_cluster.create_database()
    assert first != second
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute("CREATE TABLE only_here (x int)")
    with psycopg.connect(second) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
    assert tables == (0,)
    dump = postgres_cluster.dump(first)
    assert "CREATE TABLE public.only_here" in dump
    assert SUPERUSER in dump

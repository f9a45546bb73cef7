"""What one commit of events costs on PostgreSQL: the writer, the listeners, the database.

``bench/server_load.py --database`` prints the server side's CPU per event, but that
figure moves with how many events each commit carries, and that moves with the
machine's load: a replica commits whatever its event loop appended while the last
commit was on its way, so a cheaper commit is soon a more frequent, smaller one (the
time saved goes to latency, and the CPU per event stays about where it was). This
measures the commit itself, the part of an event's cost that is paid per batch: three
stores on one database, as three ``serve`` replicas hold them, each following the
three channels a replica follows (events, approvals, callbacks), and the first
appending ``--commits`` batches of ``--events`` text events (one per conversation),
one after another, as a replica's event writer does. Printed per commit: the CPU of
the appending thread, of the other threads (the three stores' listening threads,
which read each commit's notification), and of the database's backends (``/proc``),
and their sum per event.

Usage::

    python bench/event_commit_cpu.py --database postgresql://... [--events 5] [--commits 2000]

The database should be an empty one of its own (the stores create the tables). To
compare two trees, run it with ``PYTHONPATH`` naming one, alternating.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import psycopg

from desktop_agent.store import NewEvent, Store


def _backend_cpu(pids: list[int]) -> float:
    """CPU seconds the given server processes used so far (those still there)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="an empty PostgreSQL database")
    parser.add_argument("--events", type=int, default=5, help="events per commit")
    parser.add_argument("--commits", type=int, default=2000)
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        sys.exit("reads CPU times from /proc: Linux only")

    stores = [Store.open(args.database) for _ in range(3)]
    stops = []
    heard = [0]
    for store in stores:
        stops.append(store.watch_events(
            lambda _newest, carried: heard.__setitem__(0, heard[0] + len(carried))))
        stops.append(store.watch_approvals(lambda _conversation: None))
        stops.append(store.watch_callbacks(lambda _conversation: None))
    writer = stores[0]
    conversations = [writer.create_conversation().id for _ in range(args.events)]
    data = json.dumps({"text": " a streamed piece"})

    def commit() -> None:
        writer.append_events([NewEvent(c, "text", data, time.time()) for c in conversations])

    with psycopg.connect(args.database, autocommit=True) as admin:
        time.sleep(1.0)  # the stores' listening connections are up
        for _ in range(50):  # warm-up: connections, prepared statements, plans
            commit()
        pids = [row[0] for row in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()").fetchall()]
        database_before = _backend_cpu(pids)
        thread_before, process_before = time.thread_time(), time.process_time()
        for _ in range(args.commits):
            commit()
        time.sleep(0.5)  # the last notifications are read
        thread = time.thread_time() - thread_before
        others = time.process_time() - process_before - thread
        database = _backend_cpu(pids) - database_before
    for stop in stops:
        if stop is not None:
            stop()
    for store in stores:
        store.close()
    n = args.commits
    print(f"{args.events} events per commit, {n} commits, {len(pids)} backends of the"
          f" database (pools and listening connections); {heard[0]} events heard by the"
          " other stores")
    print(f"  per commit: appending thread {thread / n * 1e6:.0f} µs, listening threads"
          f" {others / n * 1e6:.0f} µs, PostgreSQL {database / n * 1e6:.0f} µs;"
          f" per event {(thread + others + database) / n / args.events * 1e6:.0f} µs")


if __name__ == "__main__":
    main()

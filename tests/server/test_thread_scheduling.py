"""The server's helper threads wait for its event loop instead of preempting it.

Why it matters is measured in ``bench/server_load.py`` (the start of 50 turns
at once); this checks the mechanism holds: the event writer and the threads
behind ``asyncio.to_thread`` run as ``SCHED_BATCH``, the event loop does not.
"""

from __future__ import annotations

import os
import sys
import threading

import pytest
from server_harness import RunningApi

from desktop_agent.testing import ScriptedServer, script

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="SCHED_BATCH is a Linux scheduling class")


def test_helper_threads_defer_to_the_event_loop(api: RunningApi,
                                                model_server: ScriptedServer) -> None:
    cid = api.create(base_url=model_server.base_url, model="test-model")["id"]
    model_server.enqueue(script.text("hello"))
    api.client.post(f"/conversations/{cid}/run", json={"message": "hi"})
    api.wait_idle(cid)
    policies = {thread.name: os.sched_getscheduler(thread.native_id)
                for thread in threading.enumerate() if thread.native_id is not None}
    writers = [name for name in policies if name == "event-log-writer"]
    io_threads = [name for name in policies if name.startswith("server-io")]
    assert writers and io_threads, sorted(policies)
    assert all(policies[name] == os.SCHED_BATCH for name in writers + io_threads), policies
    # The event loop runs in uvicorn's thread here; it keeps the ordinary class.
    assert policies[api.thread.name] == os.SCHED_OTHER

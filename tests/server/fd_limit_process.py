"""Drive many conversations one after another through the REST app under a low file limit.

Run as its own process (the limit applies to the whole process): sets the soft
``RLIMIT_NOFILE`` to LIMIT, serves the app and the scripted model server here,
and runs COUNT conversations, one turn each. Prints ``ok <count> fds=<open>
runners=<n>`` when every turn completed, or the first failure.

Usage: python fd_limit_process.py TMP_DIR COUNT LIMIT
"""

import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from server_harness import start_api

from desktop_agent.testing import ScriptedServer, script


def main() -> None:
    tmp, count, limit = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    with ScriptedServer() as model:
        api = start_api(tmp, idle_seconds=0.2)
        try:
            for n in range(count):
                model.enqueue(script.text(f"Reply {n}", pieces=3))
                cid = api.create(base_url=model.base_url, model="test-model")["id"]
                started = api.client.post(f"/conversations/{cid}/run",
                                          json={"message": f"hello {n}"})
                if started.status_code != 202:
                    print(f"failed at {n}: {started.status_code} {started.text}", flush=True)
                    return
                idle = api.wait_idle(cid)
                if idle["data"].get("outcome") != "complete":
                    errors = [e for e in api.events(cid) if e["type"] == "error"]
                    print(f"failed at {n}: {idle['data']} {errors}", flush=True)
                    return
            registry = api.server.config.app.state.services.runners
            deadline = time.monotonic() + 20
            while len(registry) and time.monotonic() < deadline:  # the sweeper drops them
                time.sleep(0.05)
            runners = len(registry)
            print(f"ok {count} fds={len(os.listdir('/proc/self/fd'))} runners={runners}",
                  flush=True)
        finally:
            api.stop()
            api.store.close()


if __name__ == "__main__":
    main()

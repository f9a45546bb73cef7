"""Fuzz the API from its own OpenAPI spec with schemathesis: no input makes it answer 5xx.

Each operation gets a few valid (positive) and invalid (negative) generated
requests, once against a real conversation and once against random ids.
Some operations are left out on purpose: the SSE streams never end by design,
``POST .../commands`` would run generated text as shell commands, and running a
model or starting a download would start llama.cpp on whatever model files this
machine holds or reach the real Hugging Face hub (test_local_models_api.py drives
them against the hub double and the test model).
"""

from __future__ import annotations

import contextlib
from collections import Counter

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation import GenerationMode
from server_harness import MASTER_KEY, RunningApi

EXAMPLES = 6
SKIPPED = ("/events/stream", "/commands", "/local-models/run", "/local-models/restart",
           "/local-models/downloads")


def _fuzz(api: RunningApi, operation, strategy, auth: dict, failures: list[str],
          statuses: Counter) -> int:
    calls = 0

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=[hypothesis.Phase.generate])
    @given(case=strategy)
    def call(case) -> None:
        nonlocal calls
        calls += 1
        response = case.call(base_url=api.base_url, headers=auth, timeout=15)
        statuses[response.status_code // 100] += 1
        if response.status_code >= 500:
            failures.append(f"{operation.method.upper()} {operation.path} -> "
                            f"{response.status_code}: {response.text[:300]}")

    # Unsatisfiable: nothing to make invalid in this operation (negative mode).
    with contextlib.suppress(hypothesis.errors.Unsatisfiable):
        call()
    return calls


@pytest.mark.slow
# Its work grows with the routes (a few dozen requests each): a backstop, not a speed limit.
@pytest.mark.timeout(900)
def test_no_generated_request_gets_a_server_error(api: RunningApi, model_server):
    spec = api.client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(spec)
    real = api.create(base_url=model_server.base_url, model="test-model",
                      tools=["get_weather"])["id"]
    auth = {"Authorization": f"Bearer {MASTER_KEY}"}
    failures: list[str] = []
    tried = 0
    statuses: Counter = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path.endswith(SKIPPED):
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for path_parameters in ({"conversation_id": real}, None):
                if path_parameters and "{conversation_id}" not in operation.path:
                    continue
                strategy = operation.as_strategy(generation_mode=mode,
                                                 path_parameters=path_parameters)
                tried += _fuzz(api, operation, strategy, auth, failures, statuses)
    assert tried > 100
    assert statuses[2] > 20 and statuses[4] > 20, statuses  # reached real work and refusals
    assert failures == []

"""Pytest plugin: a real llama.cpp ``llama-server`` with SmolLM2-135M, for any test tier.

``tests/conftest.py`` registers this module (``pytest_plugins``) so that the llama e2e
tests next to it and the window tests under ``tests/gui`` share one session server.
Only the fixture names below become global; the facts the tests rely on are recorded
in the ``conftest.py`` next to this file.

A missing package skips the test that asks for a server, with the install command in
the message, on a developer's machine; in CI (``CI`` set, as ``.ci/run`` has it) it
fails instead, because there a missing server means the install step broke and a
quietly skipped tier would hide it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from tier_policy import part_missing

from .llama_process import (
    LlamaNotInstalled,
    LlamaServer,
    find_model_file,
    find_server_package,
    start_server,
)


def _require_llama() -> None:
    try:
        find_server_package()
        find_model_file()
    except LlamaNotInstalled as exc:
        part_missing(str(exc))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One llama-server for the whole session (``.base_url``, ``.model``, ``.port``).

    Tests must not stop or kill it; use ``start_llama_server`` for that.
    """
    _require_llama()
    server = start_server(log_dir=tmp_path_factory.mktemp("llama"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llama_server_own_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """SmolLM2 with the template in its GGUF, which has no place for tools (llama.cpp drops them).

    Started on first use, for the whole session, like ``llama_server``.
    """
    _require_llama()
    server = start_server(log_dir=tmp_path_factory.mktemp("llama-own-template"),
                          chat_template=None)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def start_llama_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., LlamaServer]]:
    """Start extra servers owned by one test (``api_key=``, or to kill); they stop after it."""
    _require_llama()
    started: list[LlamaServer] = []

    def start(**kwargs: object) -> LlamaServer:
        server = start_server(log_dir=tmp_path_factory.mktemp("llama-extra"), **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()

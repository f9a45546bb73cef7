"""The hub double speaks the header names huggingface_hub reads, checked against its source."""

from __future__ import annotations

import inspect

import hub_double
from huggingface_hub import constants
from huggingface_hub.utils import hf_raise_for_status


def test_the_double_sends_the_header_names_the_hub_client_reads() -> None:
    assert hub_double.HEADER_REPO_COMMIT == constants.HUGGINGFACE_HEADER_X_REPO_COMMIT
    assert hub_double.HEADER_LINKED_ETAG == constants.HUGGINGFACE_HEADER_X_LINKED_ETAG
    assert hub_double.HEADER_LINKED_SIZE == constants.HUGGINGFACE_HEADER_X_LINKED_SIZE


def test_the_double_s_error_codes_are_the_ones_the_hub_client_maps_to_errors() -> None:
    source = inspect.getsource(hf_raise_for_status)

    assert f'"{hub_double.HEADER_ERROR_CODE}"' in source
    assert f'"{hub_double.HEADER_ERROR_MESSAGE}"' in source
    for code in ("GatedRepo", "RepoNotFound", "RevisionNotFound", "EntryNotFound"):
        assert f'"{code}"' in source, code

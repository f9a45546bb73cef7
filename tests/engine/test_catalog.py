"""The suggested models and the pick for a machine; a pick downloads like any hub file."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf_samples import SampleModel, write_gguf
from hub_double import HubDouble

from desktop_agent.engine.catalog import CATALOG, best_pick
from desktop_agent.engine.downloads import DownloadRequest, download_model_file
from desktop_agent.engine.gguf_info import read_model_info
from desktop_agent.engine.machine import MachineMemory

GB = 1_000_000_000


def test_every_entry_is_a_q4_k_m_gguf_of_a_plausible_size() -> None:
    for model in CATALOG:
        assert model.repo_id.count("/") == 1 and model.repo_id.endswith("-GGUF"), model
        assert model.filename.lower().endswith("q4_k_m.gguf"), model
        # Q4_K_M stores about 4.5-6.5 bits per parameter, embeddings included.
        assert 0.5 < model.size_bytes / model.parameters < 0.85, model
    assert len({m.title for m in CATALOG}) == len(CATALOG)


@pytest.mark.parametrize(("free_gb", "cores", "title"), [
    (24, 8, "Qwen3 4B"),
    (24, 2, "Qwen3 4B"),
    (24, 1, "Qwen3 1.7B"),
    (3, 8, "Qwen2.5 Coder 1.5B Instruct"),
    (0.5, 8, None),
])
def test_the_pick_is_the_most_preferred_model_that_fits_and_runs_here(
        free_gb: float, cores: int, title: str | None) -> None:
    pick = best_pick(MachineMemory(int(free_gb * GB), 32 * GB), cores)

    assert (pick.title if pick else None) == title
    if pick is not None:
        assert pick.memory_needed() <= 0.8 * free_gb * GB


def test_without_a_free_memory_figure_nothing_is_picked() -> None:
    assert best_pick(MachineMemory(None, 16 * GB), 8) is None


def test_a_model_whose_template_offers_tools_is_picked_before_one_that_needs_a_template(
        ) -> None:
    gemma_only = tuple(m for m in CATALOG if not m.template_offers_tools)
    tools = CATALOG[-3]  # Qwen3 0.6B

    assert best_pick(MachineMemory(24 * GB, None), 8, (*gemma_only, tools)) == tools


def test_a_catalogue_pick_downloads_and_reads_like_any_model(
        home: Path, tmp_path: Path, hub: HubDouble) -> None:
    pick = best_pick(MachineMemory(24 * GB, 32 * GB), 1)
    assert pick is not None
    hub.add_file(pick.repo_id, pick.filename,
                 write_gguf(tmp_path / "m.gguf", SampleModel(name=pick.title)).read_bytes())

    path = download_model_file(DownloadRequest(pick.repo_id, pick.filename,
                                               cache_dir=home / "hf", endpoint=hub.endpoint))

    assert read_model_info(path).name == pick.title

"""Whether a model fits: the verdict, the recommended context and the sentence a person reads."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
from gguf_samples import SampleModel, write_gguf

from desktop_agent.engine import machine
from desktop_agent.engine.fit import (
    FIXED_OVERHEAD_BYTES,
    FitVerdict,
    estimate_fit,
    gigabytes,
    needed_bytes,
)
from desktop_agent.engine.gguf_info import ModelInfo, read_model_info
from desktop_agent.engine.machine import MachineMemory, machine_memory, physical_cores

GB = 1_000_000_000


@pytest.fixture
def model(tmp_path: Path) -> ModelInfo:
    """A header like Qwen3-4B's (36 layers, 8 KV heads of 128) on a 2.5 GB file."""
    info = read_model_info(write_gguf(tmp_path / "m.gguf", SampleModel(
        context_length=40960, layers=36, embedding=1024, heads=8, kv_heads=8)))
    return replace(info, size_bytes=int(2.5 * GB))


def test_the_kv_cache_grows_with_the_context(model: ModelInfo) -> None:
    per_token = 36 * 8 * (128 + 128) * 2

    assert model.kv_bytes_per_token == per_token
    assert needed_bytes(model, 8192) - needed_bytes(model, 4096) == 4096 * per_token
    assert needed_bytes(model, 0) == int(2.5 * GB * 1.1) + FIXED_OVERHEAD_BYTES


def test_plenty_of_memory_gets_the_largest_context_the_model_was_trained_for(
        model: ModelInfo) -> None:
    fit = estimate_fit(model, memory=MachineMemory(24 * GB, 24 * GB), cores=8)

    assert fit.verdict is FitVerdict.FITS
    assert fit.context == 32768
    assert (fit.threads, fit.gpu_layers) == (8, 0)
    assert fit.sentence == (f"Needs {gigabytes(fit.needed_bytes)} at 32,768 tokens of context, "
                            "24.0 GB free.")


def test_less_memory_lowers_the_context_until_it_fits(model: ModelInfo) -> None:
    fit = estimate_fit(model, memory=MachineMemory(int(5.5 * GB), 8 * GB), cores=4)

    assert fit.verdict is FitVerdict.FITS
    assert fit.context < 32768
    assert fit.needed_bytes <= 0.8 * 5.5 * GB
    assert needed_bytes(model, fit.context * 2) > 0.8 * 5.5 * GB


def test_a_model_larger_than_free_memory_is_too_big_and_says_both_figures(
        model: ModelInfo) -> None:
    fit = estimate_fit(model, memory=MachineMemory(int(2.0 * GB), 4 * GB), cores=2)

    assert fit.verdict is FitVerdict.TOO_BIG
    assert fit.context == 2048
    assert fit.sentence == (f"Too big for this machine now: needs {gigabytes(fit.needed_bytes)} "
                            "at 2,048 tokens of context, 2.0 GB free.")


def test_a_chosen_context_that_nearly_fills_memory_is_tight(model: ModelInfo) -> None:
    need = needed_bytes(model, 4096)
    fit = estimate_fit(model, context=4096, memory=MachineMemory(int(need / 0.9), None), cores=2)

    assert fit.verdict is FitVerdict.TIGHT
    assert fit.sentence.endswith("free: close other programs first.")


def test_unknown_free_memory_is_said_not_guessed(model: ModelInfo) -> None:
    fit = estimate_fit(model, memory=MachineMemory(None, 16 * GB), cores=2)

    assert fit.verdict is FitVerdict.UNKNOWN
    assert fit.context == 8192
    assert fit.sentence.endswith("this machine has 16.0 GB in all (free memory unknown).")


def test_a_model_trained_on_a_short_context_is_not_offered_more(tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "short.gguf", SampleModel(context_length=4096)))

    assert estimate_fit(info, memory=MachineMemory(64 * GB, 64 * GB), cores=1).context == 4096


def test_this_machine_reports_its_memory_and_cores() -> None:
    memory = machine_memory()

    assert memory.available_bytes and memory.total_bytes
    assert 0 < memory.available_bytes <= memory.total_bytes
    assert 1 <= physical_cores() <= (os.cpu_count() or 1)


def test_meminfo_and_cpuinfo_are_read_as_linux_writes_them() -> None:
    meminfo = ("MemTotal:       16315412 kB\nMemFree:         1021548 kB\n"
               "MemAvailable:    9815508 kB\n")
    cpuinfo = "".join(f"processor\t: {n}\nphysical id\t: 0\ncore id\t\t: {n // 2}\n\n"
                      for n in range(8))

    assert machine._meminfo_fields(meminfo)["MemAvailable"] == 9815508 * 1024
    assert machine._cpuinfo_cores(cpuinfo) == 4  # 8 hyper-threads on 4 cores
    assert machine._cpuinfo_cores("processor\t: 0\nBogoMIPS\t: 50.00\n") == 0

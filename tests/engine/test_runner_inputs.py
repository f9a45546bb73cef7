"""What the runner decides before any process starts: the file check, the settings, exits.

No llama.cpp here: each case is a file or a number the runner reads, so these run
on any machine (the real engine's tests are the ``test_runner*`` modules beside).
"""

from __future__ import annotations

import signal
import struct
from pathlib import Path

import pytest
from runner_gguf_files import write_gguf

from desktop_agent.engine.errors import (
    EngineCrashed,
    EngineStopped,
    ModelFileError,
    UnreadableModelError,
    UnsupportedGgufError,
    describe_exit,
)
from desktop_agent.engine.gguf_precheck import check_model_file
from desktop_agent.engine.machine import physical_cores, startup_allowance, usable_cpus
from desktop_agent.engine.run_settings import RunSettings

METADATA = {"general.architecture": "llama", "general.name": "Tiny",
            "tokenizer.chat_template": "{{ messages }}"}


def test_a_whole_file_passes_with_its_header_facts(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "tiny.gguf", metadata=METADATA,
                       tensors={"a": 64, "b": 100})
    facts = check_model_file(model)
    assert (facts.architecture, facts.name, facts.parameter_count) == ("llama", "Tiny", 164)
    assert facts.chat_template == "{{ messages }}" and facts.context_length is None
    assert not facts.supports_tools


@pytest.mark.parametrize("cut", [1, 7, 40, 200])
def test_a_file_cut_anywhere_is_incomplete(tmp_path: Path, cut: int) -> None:
    whole = write_gguf(tmp_path / "whole.gguf", metadata=METADATA, tensors={"a": 64, "b": 100})
    data = whole.read_bytes()
    cut_file = tmp_path / "cut.gguf"
    cut_file.write_bytes(data[:len(data) - cut])
    with pytest.raises(ModelFileError, match=r"cut\.gguf is incomplete"):
        check_model_file(cut_file)


BIG_ENDIAN_3 = struct.unpack("<I", struct.pack(">I", 3))[0]


@pytest.mark.parametrize(("version", "words"), [
    (1, "version 1"), (7, "version 7"), (BIG_ENDIAN_3, "big-endian")])
def test_versions_it_cannot_read_are_said(tmp_path: Path, version: int, words: str) -> None:
    model = write_gguf(tmp_path / "v.gguf", metadata=METADATA, tensors={"a": 8}, version=version)
    with pytest.raises(UnsupportedGgufError, match=words):
        check_model_file(model)


def test_missing_folder_and_foreign_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(UnreadableModelError, match="There is no model file at"):
        check_model_file(tmp_path / "absent.gguf")
    with pytest.raises(UnreadableModelError, match="is a folder"):
        check_model_file(tmp_path)
    (tmp_path / "weights.safetensors").write_bytes(b"\x08\x00\x00\x00" + b"{}" * 40)
    with pytest.raises(ModelFileError, match=r"weights\.safetensors is not a GGUF model file"):
        check_model_file(tmp_path / "weights.safetensors")


def test_an_impossible_count_is_damage_not_truncation(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "odd.gguf", metadata=METADATA, tensors={"a": 8})
    data = bytearray(model.read_bytes())
    data[16:24] = struct.pack("<Q", 2**62)  # the key count
    model.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=r"odd\.gguf is damaged: its key count"):
        check_model_file(model)


def test_the_context_defaults_to_8192_capped_by_training_and_fit() -> None:
    assert RunSettings().resolve().context_length == 8192
    assert RunSettings().resolve(trained_context=2048).context_length == 2048
    assert RunSettings().resolve(trained_context=32768, fits_context=4096).context_length == 4096
    assert RunSettings(context_length=16384).resolve(trained_context=2048).context_length == 16384
    assert (RunSettings().resolve().threads or 0) >= 1
    with pytest.raises(ValueError, match="too short"):
        RunSettings(context_length=100)


def test_physical_cores_count_hyper_threads_once(tmp_path: Path) -> None:
    blocks = [f"processor\t: {n}\nphysical id\t: 0\ncore id\t\t: {n // 2}\n" for n in range(8)]
    (tmp_path / "cpuinfo").write_text("\n".join(blocks) + "\n")
    assert physical_cores(tmp_path / "cpuinfo") == min(4, usable_cpus())  # only CPUs it may use


def test_a_bigger_model_gets_a_longer_wait() -> None:
    assert startup_allowance(10_000_000_000) > startup_allowance(100_000_000) >= 20


def test_exits_are_said_in_words() -> None:
    assert describe_exit(None) == "the engine is still running"
    assert describe_exit(1) == "the engine exited with status 1"
    crash = EngineCrashed(-int(signal.SIGSEGV), "0.1 E srv x: boom", when="m stopped")
    assert crash.signal_name == "SIGSEGV"
    assert "killed by SIGSEGV: it crashed in native" in str(crash)
    failed = EngineStopped(1, "0.00.1 I fine\n0.00.2 E llama_model_load: bad tensor\n")
    assert str(failed) == "The engine exited with status 1. It said: llama_model_load: bad tensor"


def test_without_core_ids_every_cpu_is_a_core(tmp_path: Path) -> None:
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nBogoMIPS\t: 48.00\n\n"
                                      "processor\t: 1\nBogoMIPS\t: 48.00\n\n")
    assert physical_cores(tmp_path / "cpuinfo") == usable_cpus()

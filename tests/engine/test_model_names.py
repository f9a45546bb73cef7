"""One name means one file: paths, file names, display names, Ollama tags and catalog ids,
resolved over a library scanned from real layouts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gguf_samples import SampleModel, write_gguf
from library_layouts import ollama_pull

from desktop_agent.engine.errors import ModelNotFoundError
from desktop_agent.engine.library import LibraryEntry, ModelLibrary
from desktop_agent.engine.model_names import find_model_file, names_a_path, resolve_model


@pytest.fixture
def library(home: Path, tmp_path: Path) -> list[LibraryEntry]:
    write_gguf(home / ".lmstudio/models/unsloth/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf")
    ollama_pull(home / ".ollama" / "models", "qwen3", "latest",
                write_gguf(tmp_path / "a.gguf", SampleModel(name="a")).read_bytes())
    ollama_pull(home / ".ollama" / "models", "qwen3", "4b",
                write_gguf(tmp_path / "b.gguf", SampleModel(name="b")).read_bytes())
    write_gguf(home / ".cache/llama.cpp/same.gguf")
    write_gguf(tmp_path / "mine" / "same.gguf", SampleModel(name="other"))
    return ModelLibrary(None, extra_folders=(tmp_path / "mine",)).scan()


def resolved(name: str, entries: list[LibraryEntry]) -> str:
    found = resolve_model(name, entries)
    return str(found) if isinstance(found, Path) else found.display_name


def test_file_display_and_ollama_names_each_find_their_model(
        library: list[LibraryEntry]) -> None:
    assert resolved("qwen3-1.7b-q4_k_m.gguf", library) == "unsloth/Qwen3-1.7B-Q4_K_M"
    assert resolved("Qwen3-1.7B-Q4_K_M", library) == "unsloth/Qwen3-1.7B-Q4_K_M"
    assert resolved("unsloth/Qwen3-1.7B-Q4_K_M", library) == "unsloth/Qwen3-1.7B-Q4_K_M"
    assert resolved("qwen3", library) == "qwen3:latest"
    assert resolved("qwen3:4b", library) == "qwen3:4b"
    assert resolved("qwen3-1.7b", library) == "unsloth/Qwen3-1.7B-Q4_K_M"  # a catalog id


def test_paths_need_no_library_and_a_wrong_one_is_named(tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "x.gguf")
    assert resolve_model(str(model), []) == model
    assert names_a_path("./x.gguf") and names_a_path("~/m/x.gguf") and names_a_path("m/x.gguf")
    assert not names_a_path("hf.co/owner/repo:Q4_K_M") and not names_a_path("owner/model")
    with pytest.raises(ModelNotFoundError, match="There is no model file at"):
        resolve_model(str(tmp_path / "gone.gguf"), [])
    assert find_model_file(str(model)) == (model, "x")


def test_a_name_for_two_files_is_refused_naming_both(library: list[LibraryEntry]) -> None:
    with pytest.raises(ModelNotFoundError, match=r"“same” fits 2 models: .*Give the file's path"):
        resolve_model("same", library)


def test_a_catalog_model_not_downloaded_says_how_to_get_it(
        library: list[LibraryEntry]) -> None:
    with pytest.raises(ModelNotFoundError,
                       match=re.escape("Qwen3 4B is not downloaded yet: get it with "
                                       "`desktop-agent models pull "
                                       "Qwen/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf`")):
        resolve_model("qwen3-4b", library)
    with pytest.raises(ModelNotFoundError, match="No model called “nothing-here”"):
        resolve_model("nothing-here", library)


@pytest.mark.parametrize("name", ["x" * 5000, "Ṱ̺̺̕o͞ ̷i̲̬͇̪͙n̝̗͕v̟̜̘̦͟o̶̙̰̠kè͚̮̺̪̹̱̤" * 60, "model\x00name"])
def test_a_name_no_file_can_have_is_not_found_not_an_error(
        name: str, library: list[LibraryEntry]) -> None:
    # a REST client sent such names (the fuzz test): the answer is "no such model", not a 500
    with pytest.raises(ModelNotFoundError):
        resolve_model(name, library)

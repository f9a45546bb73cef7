"""The model library over real folder layouts: LM Studio's, Ollama's manifests and
blobs, the Hugging Face cache as huggingface_hub itself writes it, llama.cpp's cache,
and the person's own folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from e2e.llama.llama_process import LlamaNotInstalled, find_model_file
from gguf_samples import SampleModel, write_gguf
from hub_double import HubDouble
from huggingface_hub import hf_hub_download
from library_layouts import ollama_pull
from tier_policy import part_missing

from desktop_agent.engine.fit import FitVerdict
from desktop_agent.engine.header_cache import CACHE_FILE_NAME
from desktop_agent.engine.library import LibraryEntry, ModelLibrary
from desktop_agent.engine.model_folders import ModelSource, hugging_face_cache


def scan(cache: Path, extra: tuple[Path, ...] = ()) -> dict[str, LibraryEntry]:
    return {entry.display_name: entry
            for entry in ModelLibrary(cache, extra_folders=extra).scan()}


def test_lm_studio_models_are_found_in_both_of_its_folders(home: Path, tmp_path: Path) -> None:
    new = write_gguf(home / ".lmstudio/models/Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf")
    old = write_gguf(home / ".cache/lm-studio/models/bartowski/Llama-3.2-3B-Instruct-GGUF/"
                            "Llama-3.2-3B-Instruct-Q4_K_M.gguf", SampleModel(name="Llama 3.2"))

    models = scan(tmp_path / "data")

    assert set(models) == {"Qwen/Qwen3-1.7B-Q4_K_M", "bartowski/Llama-3.2-3B-Instruct-Q4_K_M"}
    entry = models["Qwen/Qwen3-1.7B-Q4_K_M"]
    assert entry.source is ModelSource.LM_STUDIO
    assert entry.path == new
    assert entry.size_bytes == new.stat().st_size
    assert entry.info is not None and entry.info.quantization == "Q4_K_M"
    assert entry.problem is None
    assert entry.fit is not None and entry.fit.verdict is FitVerdict.FITS
    assert models["bartowski/Llama-3.2-3B-Instruct-Q4_K_M"].path == old


@pytest.mark.parametrize("custom_store", [False, True])
def test_ollama_models_are_named_as_ollama_list_names_them(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, custom_store: bool) -> None:
    store = tmp_path / "ollama-store" if custom_store else home / ".ollama" / "models"
    if custom_store:
        monkeypatch.setenv("OLLAMA_MODELS", str(store))
    sample = write_gguf(tmp_path / "sample.gguf").read_bytes()
    blob = ollama_pull(store, "qwen3", "4b", sample)
    ollama_pull(store, "Llama-3.2-3B-Instruct-GGUF", "Q4_K_M",
                write_gguf(tmp_path / "other.gguf", SampleModel(name="other")).read_bytes(),
                registry="hf.co", namespace="bartowski")

    models = scan(tmp_path / "data")

    assert set(models) == {"qwen3:4b", "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M"}
    assert models["qwen3:4b"].source is ModelSource.OLLAMA
    assert models["qwen3:4b"].path == blob
    assert models["qwen3:4b"].info is not None


def test_an_ollama_manifest_without_its_blob_or_unreadable_is_skipped(
        home: Path, tmp_path: Path) -> None:
    store = home / ".ollama" / "models"
    blob = ollama_pull(store, "gone", "latest", b"GGUF-not-really")
    blob.unlink()
    broken = store / "manifests/registry.ollama.ai/library/broken/latest"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")

    assert scan(tmp_path / "data") == {}


def test_hugging_face_cache_written_by_huggingface_hub_is_found(
        home: Path, tmp_path: Path, hub: HubDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    hf_home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(hf_home))
    content = write_gguf(tmp_path / "q.gguf", SampleModel(name="Qwen3 0.6B")).read_bytes()
    hub.add_file("Qwen/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q4_K_M.gguf", content)
    hub.add_file("Qwen/Qwen3-0.6B-GGUF", "README.md", b"# Qwen3")
    for name in ("Qwen3-0.6B-Q4_K_M.gguf", "README.md"):
        hf_hub_download("Qwen/Qwen3-0.6B-GGUF", name, endpoint=hub.endpoint, token=False,
                        cache_dir=hf_home / "hub")

    models = scan(tmp_path / "data")

    assert list(models) == ["Qwen/Qwen3-0.6B-Q4_K_M"]
    entry = models["Qwen/Qwen3-0.6B-Q4_K_M"]
    assert entry.source is ModelSource.HUGGING_FACE
    assert entry.info is not None and entry.info.name == "Qwen3 0.6B"
    assert entry.path.read_bytes() == content
    assert entry.size_bytes == len(content)


def test_llama_cpp_cache_and_its_variable_are_honoured(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_gguf(home / ".cache/llama.cpp/ggml-org_gemma-3-1b-it-GGUF_gemma-3-1b-it-Q4_K_M.gguf")
    assert [e.source for e in scan(tmp_path / "data").values()] == [ModelSource.LLAMA_CPP]

    monkeypatch.setenv("LLAMA_CACHE", str(tmp_path / "llama-cache"))
    write_gguf(tmp_path / "llama-cache" / "unsloth_Qwen3-4B-GGUF_Qwen3-4B-Q4_K_M.gguf")

    assert list(scan(tmp_path / "data")) == ["unsloth_Qwen3-4B-GGUF_Qwen3-4B-Q4_K_M"]


def test_a_person_s_folder_lists_good_split_and_broken_models(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "my models"
    write_gguf(folder / "good.gguf")
    write_gguf(folder / "nested" / "big.gguf", SampleModel(layers=4), split_max_tensors=2)
    cut = write_gguf(folder / "cut.gguf")
    with cut.open("r+b") as file:
        file.truncate(cut.stat().st_size // 2)
    (folder / "page.gguf").write_text("<html>404</html>")
    write_gguf(folder / "mmproj-model-f16.gguf", SampleModel(arch="clip"))
    write_gguf(folder / "imatrix_unsloth.gguf",
               SampleModel(extra_strings=(("general.type", "imatrix"),)))
    (folder / "notes.txt").write_text("not a model")

    models = scan(tmp_path / "data", (folder,))

    assert set(models) == {"good", "big", "cut", "page"}
    assert all(entry.source is ModelSource.FOLDER for entry in models.values())
    assert len(models["big"].paths) == 3
    assert models["big"].info is not None
    assert models["cut"].info is None and models["cut"].fit is None
    assert models["cut"].problem is not None
    assert models["cut"].problem.startswith("cut.gguf is incomplete")
    assert models["page"].problem == "page.gguf is not a GGUF model file."


def test_the_same_file_reached_through_two_folders_is_listed_once(
        home: Path, tmp_path: Path) -> None:
    lm_studio = home / ".lmstudio" / "models"
    write_gguf(lm_studio / "Qwen" / "Qwen3-4B-GGUF" / "Qwen3-4B-Q4_K_M.gguf")

    models = scan(tmp_path / "data", (lm_studio,))

    assert [(name, e.source) for name, e in models.items()] == [
        ("Qwen/Qwen3-4B-Q4_K_M", ModelSource.LM_STUDIO)]


def test_the_real_smollm2_is_listed_from_a_folder(home: Path, tmp_path: Path) -> None:
    try:
        smollm2 = find_model_file()
    except LlamaNotInstalled as missing:
        part_missing(str(missing))
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / smollm2.name).symlink_to(smollm2)

    entry = scan(tmp_path / "data", (folder,))["SmolLM2-135M-Instruct.Q4_1"]

    assert entry.info is not None and entry.info.size_label == "135M"
    assert entry.fit is not None and entry.fit.verdict is FitVerdict.FITS


def test_an_unchanged_file_is_not_read_again_and_a_changed_one_is(
        home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    path = write_gguf(folder / "m.gguf", SampleModel(name="Before"))
    data = tmp_path / "data"
    assert scan(data, (folder,))["m"].info.name == "Before"  # type: ignore[union-attr]
    assert (data / CACHE_FILE_NAME).is_file()

    # Same size and modification time: the remembered header is used, not the file.
    stat = path.stat()
    path.write_bytes(b"X" * stat.st_size)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert scan(data, (folder,))["m"].info.name == "Before"  # type: ignore[union-attr]

    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert scan(data, (folder,))["m"].problem == "m.gguf is not a GGUF model file."


def test_a_damaged_cache_file_is_ignored_and_rewritten(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    write_gguf(folder / "m.gguf")
    data = tmp_path / "data"
    data.mkdir()
    (data / CACHE_FILE_NAME).write_text('{"format": 2, "models": {"x": {"fingerprint": 3}}}')

    assert scan(data, (folder,))["m"].info is not None
    assert "m.gguf" in (data / CACHE_FILE_NAME).read_text()


def test_files_no_longer_on_disk_leave_the_cache(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    gone = write_gguf(folder / "gone.gguf")
    write_gguf(folder / "kept.gguf")
    data = tmp_path / "data"
    scan(data, (folder,))
    gone.unlink()

    assert list(scan(data, (folder,))) == ["kept"]
    assert "gone.gguf" not in (data / CACHE_FILE_NAME).read_text()


@pytest.mark.parametrize(("variables", "expected"), [
    ({}, "home/.cache/huggingface/hub"),
    ({"XDG_CACHE_HOME": "xdg"}, "xdg/huggingface/hub"),
    ({"XDG_CACHE_HOME": "xdg", "HF_HOME": "hf-home"}, "hf-home/hub"),
    ({"HF_HOME": "hf-home", "HF_HUB_CACHE": "hub-cache"}, "hub-cache"),
])
def test_the_hub_cache_is_found_as_huggingface_hub_finds_it(
        home: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str],
        expected: str) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, str(home.parent / value))

    assert hugging_face_cache() == home.parent / expected

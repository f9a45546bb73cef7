"""Downloads through huggingface_hub against a hub double on 127.0.0.1: the file lands in
the hub's cache, progress is reported, and every failure a person can meet has its type,
its sentence, and the right fate for the bytes already downloaded."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest
from e2e.llama.llama_process import LlamaNotInstalled, find_model_file
from gguf_samples import SampleModel, write_gguf
from hub_double import HubDouble
from huggingface_hub import constants, scan_cache_dir
from tier_policy import part_missing

from desktop_agent.engine.download_progress import DownloadProgress
from desktop_agent.engine.downloads import (
    DownloadRequest,
    download_model,
    download_model_file,
    partial_path,
)
from desktop_agent.engine.errors import (
    ChecksumMismatchError,
    DiskFullError,
    DownloadCancelledError,
    DownloadInterruptedError,
    GatedModelError,
    HubEntryNotFoundError,
)
from desktop_agent.engine.gguf_info import read_model_info
from desktop_agent.engine.library import ModelLibrary
from desktop_agent.engine.model_folders import ModelSource

REPO = "Qwen/Qwen3-0.6B-GGUF"
FILE = "Qwen3-0.6B-Q4_K_M.gguf"
#: The hub client hands progress over once per chunk of this size.
CHUNK = constants.DOWNLOAD_CHUNK_SIZE


def big_file(size: int) -> bytes:
    """Bytes that differ along the file, so a misplaced range would not hash right."""
    block = hashlib.sha256(b"model").digest() * 2048
    return (block * (size // len(block) + 1))[:size]


def blob_folder(cache: Path, repo: str = REPO) -> Path:
    return cache / f"models--{repo.replace('/', '--')}" / "blobs"


@pytest.fixture
def cache(home: Path) -> Path:
    return home / "hf-cache"


def request(hub: HubDouble, cache: Path, **changes: object) -> DownloadRequest:
    fields: dict[str, object] = {"repo_id": REPO, "filename": FILE, "cache_dir": cache,
                                 "endpoint": hub.endpoint, **changes}
    return DownloadRequest(**fields)  # type: ignore[arg-type]


def test_a_model_lands_in_the_hub_cache_where_the_library_finds_it(
        home: Path, tmp_path: Path, hub: HubDouble, monkeypatch: pytest.MonkeyPatch) -> None:
    content = write_gguf(tmp_path / "m.gguf", SampleModel(name="Qwen3 0.6B")).read_bytes()
    sha256 = hub.add_file(REPO, FILE, content)
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)  # no endpoint argument: the variable
    monkeypatch.setenv("HF_HOME", str(home / "hf"))
    reports: list[DownloadProgress] = []

    path = download_model_file(DownloadRequest(REPO, FILE), progress=reports.append)

    assert path.read_bytes() == content
    assert path.parent.parent.name == "snapshots"
    assert path.resolve() == home / "hf" / "hub" / blob_folder(Path(""), REPO) / sha256
    repos = scan_cache_dir(home / "hf" / "hub").repos
    assert [(r.repo_id, set(r.refs)) for r in repos] == [(REPO, {"main"})]
    entry = ModelLibrary(tmp_path / "data").scan()[0]
    assert (entry.source, entry.display_name) == (ModelSource.HUGGING_FACE,
                                                  "Qwen/Qwen3-0.6B-Q4_K_M")
    assert reports[-1].verifying and reports[-1].downloaded_bytes == len(content)
    downloading = [r for r in reports if not r.verifying]
    assert downloading[-1].downloaded_bytes == downloading[-1].total_bytes == len(content)


def test_a_file_already_in_the_cache_is_returned_without_the_network(
        home: Path, cache: Path, hub: HubDouble) -> None:
    hub.add_file(REPO, FILE, b"GGUF" * 100)
    first = download_model_file(request(hub, cache))
    seen = len(hub.requests)

    assert download_model_file(request(hub, cache, endpoint="http://127.0.0.1:9")) == first
    assert len(hub.requests) == seen


def test_progress_says_bytes_speed_and_time_left(home: Path, cache: Path,
                                                 hub: HubDouble) -> None:
    hub.add_file(REPO, FILE, big_file(3 * CHUNK))
    hub.faults.pace = 0.001
    reports: list[DownloadProgress] = []

    download_model_file(request(hub, cache), progress=reports.append)

    downloading = [r for r in reports if not r.verifying]
    assert downloading[0].downloaded_bytes == 0 and downloading[0].total_bytes == 3 * CHUNK
    assert [r.downloaded_bytes for r in downloading] == sorted(r.downloaded_bytes
                                                               for r in downloading)
    last = downloading[-1]
    assert last.downloaded_bytes == 3 * CHUNK
    assert last.bytes_per_second is not None and last.bytes_per_second > 0
    assert last.seconds_left == 0


def test_a_gated_model_without_a_token_says_to_accept_its_terms(
        home: Path, cache: Path, hub: HubDouble) -> None:
    hub.add_file("meta-llama/Llama-3.2-3B-Instruct", FILE, b"GGUF", granted_tokens={"hf_ok"})

    with pytest.raises(GatedModelError) as caught:
        download_model_file(request(hub, cache, repo_id="meta-llama/Llama-3.2-3B-Instruct"))

    assert str(caught.value) == ("meta-llama/Llama-3.2-3B-Instruct is gated: accept its terms "
                                 "on its Hugging Face page and add an access token.")


def test_a_token_without_access_is_told_apart_and_never_shown(
        home: Path, cache: Path, hub: HubDouble) -> None:
    hub.add_file("meta-llama/Llama-3.2-3B-Instruct", FILE, b"GGUF", granted_tokens={"hf_ok"})

    with pytest.raises(GatedModelError) as caught:
        download_model_file(request(hub, cache, repo_id="meta-llama/Llama-3.2-3B-Instruct",
                                    token="hf_secret_not_granted"))

    assert str(caught.value).startswith("Your Hugging Face token has no access to "
                                        "meta-llama/Llama-3.2-3B-Instruct yet")
    assert "hf_secret" not in str(caught.value) + repr(caught.value)


def test_a_granted_token_downloads_and_never_reaches_the_cdn(
        home: Path, cache: Path, hub: HubDouble) -> None:
    hub.add_file("meta-llama/Llama-3.2-3B-Instruct", FILE, b"GGUF" * 10, granted_tokens={"hf_ok"})

    path = download_model_file(request(hub, cache, repo_id="meta-llama/Llama-3.2-3B-Instruct",
                                       token="hf_ok"))

    assert path.read_bytes() == b"GGUF" * 10
    hub_auth = {r.headers.get("authorization") for r in hub.requests if r.server == "hub"}
    assert hub_auth == {"Bearer hf_ok"}
    assert all("authorization" not in r.headers for r in hub.requests if r.server == "cdn")


@pytest.mark.parametrize(("changes", "sentence"), [
    ({"repo_id": "Qwen/No-Such-Repo"},
     "There is no model Qwen/No-Such-Repo on the hub (or it is private and needs a token)."),
    ({"filename": "Qwen3-0.6B-Q9.gguf"}, f"{REPO} has no file Qwen3-0.6B-Q9.gguf."),
    ({"revision": "v9"}, f"{REPO} has no revision v9."),
])
def test_what_the_hub_does_not_have_is_named(home: Path, cache: Path, hub: HubDouble,
                                             changes: dict[str, str], sentence: str) -> None:
    hub.add_file(REPO, FILE, b"GGUF")

    with pytest.raises(HubEntryNotFoundError) as caught:
        download_model_file(request(hub, cache, **changes))

    assert str(caught.value) == sentence


def test_a_dropped_connection_is_resumed_within_the_same_download(
        home: Path, cache: Path, hub: HubDouble) -> None:
    content = big_file(2 * CHUNK + 123)
    hub.add_file(REPO, FILE, content)
    hub.faults.cut_after = CHUNK + 1000

    path = download_model_file(request(hub, cache))

    assert path.read_bytes() == content
    # The client writes whole chunks: it resumes after the last one it wrote.
    ranges = [r.headers.get("range") for r in hub.requests if r.server == "cdn"]
    assert ranges == [None, f"bytes={CHUNK}-"]


@pytest.mark.slow
def test_when_the_network_is_gone_the_partial_is_kept_and_the_next_download_resumes(
        home: Path, cache: Path, hub: HubDouble) -> None:
    content = big_file(2 * CHUNK)
    sha256 = hub.add_file(REPO, FILE, content)
    hub.faults.cut_after = CHUNK + 5000
    hub.faults.down_after_cut = True  # the hub client's own retries all fail

    with pytest.raises(DownloadInterruptedError) as caught:
        download_model_file(request(hub, cache))

    partial = partial_path(blob_folder(cache) / sha256)
    assert caught.value.bytes_kept == partial.stat().st_size == CHUNK  # whole chunks
    assert "is kept and downloading again resumes from there" in str(caught.value)

    hub.faults.down = False
    path = download_model_file(request(hub, cache))

    assert path.read_bytes() == content
    assert not partial.exists()
    assert [r.headers.get("range") for r in hub.requests if r.server == "cdn"][-1] == \
        f"bytes={CHUNK}-"


def test_a_hub_that_cannot_be_reached_says_so(home: Path, cache: Path) -> None:
    with pytest.raises(DownloadInterruptedError) as caught:
        download_model_file(DownloadRequest(REPO, FILE, cache_dir=cache,
                                            endpoint="http://127.0.0.1:9"))

    assert str(caught.value) == (f"Cannot reach 127.0.0.1:9 to download {FILE}: check the "
                                 "network connection.")
    assert caught.value.bytes_kept == 0


def test_cancelling_keeps_what_was_downloaded_and_the_next_try_resumes(
        home: Path, cache: Path, hub: HubDouble) -> None:
    content = big_file(3 * CHUNK)
    sha256 = hub.add_file(REPO, FILE, content)
    hub.faults.pace = 0.0005
    cancel = threading.Event()

    def cancel_after_first_chunk(report: DownloadProgress) -> None:
        if report.downloaded_bytes >= CHUNK:
            cancel.set()

    with pytest.raises(DownloadCancelledError) as caught:
        download_model_file(request(hub, cache), progress=cancel_after_first_chunk,
                            cancel=cancel)

    partial = partial_path(blob_folder(cache) / sha256)
    kept = partial.stat().st_size
    assert kept % CHUNK == 0 and 0 < kept < len(content)
    assert partial.read_bytes() == content[:kept]
    assert str(caught.value).startswith(f"Download of {FILE} cancelled;")

    path = download_model_file(request(hub, cache))

    assert path.read_bytes() == content
    assert [r.headers.get("range") for r in hub.requests if r.server == "cdn"][-1] == \
        f"bytes={kept}-"


def test_bytes_that_do_not_match_the_published_checksum_are_deleted(
        home: Path, cache: Path, hub: HubDouble) -> None:
    content = big_file(CHUNK // 2)
    sha256 = hub.add_file(REPO, FILE, content)
    hub.faults.wrong_content = content[:-1] + b"!"

    with pytest.raises(ChecksumMismatchError) as caught:
        download_model_file(request(hub, cache))

    assert str(caught.value).endswith("it was deleted: download it again.")
    assert sorted(os.listdir(blob_folder(cache))) == []
    assert not partial_path(blob_folder(cache) / sha256).exists()


def test_a_file_larger_than_the_free_space_is_refused_before_downloading(
        home: Path, cache: Path, hub: HubDouble) -> None:
    hub.add_file(REPO, FILE, b"GGUF")
    hub.announced_sizes[FILE] = 1 << 60  # an exabyte

    with pytest.raises(DiskFullError, match=rf"^Not enough disk space for {FILE}: it needs"):
        download_model_file(request(hub, cache))

    assert not any(r.server == "cdn" for r in hub.requests)


def test_a_disk_that_fills_up_mid_download_says_so(home: Path, cache: Path,
                                                   hub: HubDouble) -> None:
    if not Path("/dev/full").exists():
        part_missing("/dev/full (a device that answers every write with 'no space') is missing")
    content = big_file(CHUNK + 10)
    sha256 = hub.add_file(REPO, FILE, content)
    blobs = blob_folder(cache)
    blobs.mkdir(parents=True)
    partial_path(blobs / sha256).symlink_to("/dev/full")  # every write: ENOSPC

    with pytest.raises(DiskFullError, match=rf"^The disk filled up while downloading {FILE}"):
        download_model_file(request(hub, cache))


def test_the_real_smollm2_downloads_verified_and_reads_as_on_disk(
        home: Path, cache: Path, hub: HubDouble) -> None:
    try:
        smollm2 = find_model_file()
    except LlamaNotInstalled as missing:
        part_missing(str(missing))
    hub.add_file("HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", smollm2.name,
                 smollm2.read_bytes())

    repo = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF"
    path = download_model_file(request(hub, cache, repo_id=repo, filename=smollm2.name))

    downloaded, original = read_model_info(path), read_model_info(smollm2)
    assert downloaded.size_bytes == original.size_bytes == smollm2.stat().st_size
    assert downloaded.to_json() | {"parts": []} == original.to_json() | {"parts": []}


def test_a_split_model_downloads_every_part_into_one_snapshot(
        home: Path, tmp_path: Path, cache: Path, hub: HubDouble) -> None:
    write_gguf(tmp_path / "split" / "Big-Q4_K_M.gguf", SampleModel(layers=4), split_max_tensors=2)
    parts = sorted((tmp_path / "split").glob("*.gguf"))
    for part in parts:
        hub.add_file(REPO, f"Q4_K_M/{part.name}", part.read_bytes())
    fetched: set[str] = set()

    path = download_model(request(hub, cache, filename=f"Q4_K_M/{parts[0].name}"),
                          progress=lambda report: fetched.add(report.filename))

    assert path.name == parts[0].name
    assert fetched == {f"Q4_K_M/{part.name}" for part in parts}
    info = read_model_info(path)
    assert len(info.parts) == 3
    assert info.size_bytes == sum(part.stat().st_size for part in parts)

"""Which file of a Hugging Face repository to download: ``REPO[/FILE]`` as people write it.

``desktop-agent models pull``, the REST download route and the Models window's "any
Hugging Face repo" field take ``owner/repo/file.gguf``, ``owner/repo`` (then the
repository's Q4_K_M file, the usual balance of size and quality, or its only GGUF
file), or the address copied from the hub's page. A repository holding several
candidates and no Q4_K_M is refused with the choices listed: guessing would
download gigabytes of the wrong thing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from desktop_agent.engine.errors import DownloadError
from desktop_agent.engine.gguf_info import is_later_split_part

_HUB_ADDRESS = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/", re.IGNORECASE)
_FILE_PAGE = re.compile(r"^(?P<repo>[^/]+/[^/]+)/(?:blob|resolve)/(?P<rev>[^/]+)/(?P<file>.+)$")
_PREFERRED_QUANTISATION = "q4_k_m"


def parse_source(text: str) -> tuple[str, str | None, str]:
    """``(repo_id, filename or None, revision)`` from what a person wrote.

    Raises:
        ValueError: Not ``owner/repo[/file]``; the message says what is expected.
    """
    cleaned = _HUB_ADDRESS.sub("", text.strip()).strip("/")
    page = _FILE_PAGE.match(cleaned)
    if page is not None:
        return page["repo"], page["file"], page["rev"]
    parts = cleaned.split("/")
    if len(parts) < 2 or not all(parts[:2]):
        raise ValueError(f"“{text}” is not a Hugging Face model: write owner/repo or "
                         "owner/repo/file.gguf (for example unsloth/Qwen3-1.7B-GGUF).")
    filename = "/".join(parts[2:]) or None
    return "/".join(parts[:2]), filename, "main"


def choose_file(repo_id: str, files: Sequence[str]) -> str:
    """The GGUF file to download from a repository listing ``files``.

    Raises:
        DownloadError: No GGUF file, or several and none of them Q4_K_M.
    """
    models = [name for name in files if name.lower().endswith(".gguf")
              and not is_later_split_part(PurePosixPath(name))
              and not PurePosixPath(name).name.lower().startswith(("mmproj", "imatrix"))]
    if not models:
        raise DownloadError(repo_id, "", f"{repo_id} holds no GGUF model file.")
    if len(models) == 1:
        return models[0]
    preferred = [name for name in models if _PREFERRED_QUANTISATION in name.lower()]
    if preferred:
        return min(preferred, key=len)
    listed = ", ".join(PurePosixPath(name).name for name in models[:8])
    raise DownloadError(repo_id, "", (
        f"{repo_id} holds {len(models)} model files and none is Q4_K_M; name one: "
        f"{repo_id}/FILE, with FILE one of {listed}."))


def repo_files(repo_id: str, *, revision: str = "main", token: str | None = None,
               endpoint: str | None = None) -> list[str]:
    """Every file of the repository (the hub's tree listing). Blocking: network.

    Raises:
        DownloadError: The hub refused or could not be reached (the sentence says which).
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        return list(HfApi(endpoint=endpoint, token=token or False).list_repo_files(
            repo_id, revision=revision))
    except RepositoryNotFoundError:
        raise DownloadError(repo_id, "", (
            f"There is no model {repo_id} on the hub (or it is private and needs a "
            "token).")) from None
    except GatedRepoError:
        raise DownloadError(repo_id, "", (
            f"{repo_id} is gated: accept its terms on its Hugging Face page and add an "
            "access token.")) from None
    except (HfHubHTTPError, OSError) as error:
        raise DownloadError(repo_id, "", (
            f"Could not list the files of {repo_id}: {error}. Name the file "
            f"({repo_id}/FILE.gguf) or check the network connection.")) from None

"""The one way this package uploads to the Hugging Face Hub: checked repo id, a token, a secret
scan of every file (:func:`~builders._secrets.scan_files`), one commit; every Hub failure becomes a
one-line error naming the fix."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import make_folder
from builders._secrets import env_secrets, redact_secrets, scan_files

__all__ = [
    "HubRefusedError",
    "check_hub_access",
    "check_repo_id",
    "folder_files",
    "hub_download_errors",
    "hub_errors",
    "hub_secrets",
    "push_dataset",
    "resolve_token",
    "upload_files",
    "upload_operations",
    "write_dry_run",
]

_REPO_TYPES = ("dataset", "model", "space")


class HubRefusedError(RagQaArenaError):
    """The Hub answered an upload with an HTTP error: ``status`` and the Hub's ``reason`` (no credential)."""

    def __init__(self, message: str, *, status: int | None = None, reason: str = ""):
        super().__init__(message)
        self.status, self.reason = status, reason


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if huggingface_hub accepts it as ``ORG/NAME``, else a one-line error."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise RagQaArenaError(f"Bad repo id {repo_id!r}: not of the form ORG/NAME (e.g. my-org/rag-qa-arena-gpt-4o)")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise RagQaArenaError(f"Bad repo id {repo_id!r}: {str(error).splitlines()[0]} Use ORG/NAME") from None
    return repo_id


@dataclass(frozen=True, kw_only=True)
class HubUpload:
    """How every push uploads (a run, a metric Space, an index, the dataset, a judge card): a ``private``
    repo when it is created, the ``token`` (else, with ``token_from_env``, only ``$HF_TOKEN``; else
    huggingface_hub's usual places; never printed or written), and the ``commit_message``."""

    private: bool = False
    token: str | None = None
    token_from_env: bool = False
    commit_message: str | None = None


#: The loose keywords :class:`HubUpload` groups (accepted, deprecated, by every push function).
HUB_UPLOAD_KEYWORDS = ("private", "token", "token_from_env", "commit_message")


def resolve_token(token: str | None = None, *, from_env: bool = False) -> str:
    """The Hub token: ``token``; with ``from_env`` only ``$HF_TOKEN``; else huggingface_hub's usual places."""
    if token:
        return token
    if from_env:
        token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
        if not token:
            raise RagQaArenaError("--token-from-env was given but HF_TOKEN is not set: export HF_TOKEN=... and try again")
        return token
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise RagQaArenaError(
            "No Hugging Face token found: run `hf auth login` or set HF_TOKEN (a token with write access)"
        )
    return token


def folder_files(folder: str | os.PathLike) -> dict[str, Path]:
    """``{path_in_repo: file}`` for every file of an exported folder (what a dataset push commits)."""
    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(f"{folder} has no README.md: export it first with `rag-qa-arena data export {folder}`")
    return {
        path.relative_to(folder).as_posix(): path
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(".partial")
    }


def upload_operations(files: Mapping[str, bytes | Path], *, token: str | None = None, what: str = "the upload") -> list:
    """The ``CommitOperationAdd`` list for ``files``, after :func:`scan_files` (no network)."""
    from huggingface_hub import CommitOperationAdd

    scan_files(files, what=what, token=token)
    return [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(data) if isinstance(data, Path) else data)
            for name, data in files.items()]


def upload_files(
    repo_id: str,
    files: Mapping[str, bytes | Path],
    *,
    repo_type: str = "dataset",
    private: bool = False,
    token: str | None = None,
    token_from_env: bool = False,
    commit_message: str,
    space_sdk: str | None = None,
    api=None,
) -> str:
    """Create the repo if needed and commit ``files`` (``{path_in_repo: bytes or file}``) in one commit;
    returns the commit URL. Every text file is scanned for credentials first.

    ``repo_type``: "dataset", "model" or "space"; a Space is created with ``space_sdk`` (e.g. "gradio"),
    which the Hub requires for a new Space.
    """
    check_repo_id(repo_id)
    if repo_type not in _REPO_TYPES:
        raise RagQaArenaError(f"Unknown repo type {repo_type!r}. Available: {', '.join(_REPO_TYPES)}")
    if (space_sdk is not None) != (repo_type == "space"):
        raise RagQaArenaError("space_sdk goes with repo_type='space' (and a Space needs one, e.g. space_sdk='gradio')")
    if api is None or token_from_env:
        token = resolve_token(token, from_env=token_from_env)
    operations = upload_operations(files, token=token, what=f"to {repo_id}")
    with hub_errors(repo_id, token):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        space = {"space_sdk": space_sdk} if repo_type == "space" else {}
        api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True, token=token, **space)
        info = api.create_commit(repo_id, operations, commit_message=commit_message, repo_type=repo_type, token=token)
    return str(getattr(info, "commit_url", info))


@grouped_keywords("upload", HubUpload, HUB_UPLOAD_KEYWORDS)
def push_dataset(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    upload: HubUpload | None = None,
    eval_yaml: bool = True,
    on_note: Callable[[str], None] | None = None,
    api=None,
) -> str:
    """Create (if needed) the dataset repo ``repo_id`` and commit the exported folder to it; returns the commit URL.

    The token comes from ``token=``; with ``token_from_env`` only ``$HF_TOKEN``; else huggingface_hub's
    usual places (``HF_TOKEN``, the saved login); it is never printed or written. ``eval_yaml=False``
    leaves the folder's ``eval.yaml`` out. When the Hub refuses the commit (HTTP 400/422, or any
    refusal but 401/403 that names eval.yaml) and a commit without ``eval.yaml`` goes through, the data
    is pushed without it and ``on_note`` gets one line saying why and how to register the framework
    id. ``api`` stands in for ``HfApi`` in tests. ``upload``: privacy, token and commit message
    (:class:`HubUpload`; the loose ``private=``, ``token=``, ``token_from_env=``, ``commit_message=`` work
    for one release, with a ``DeprecationWarning``).
    """
    upload = upload if upload is not None else HubUpload()
    private, token, token_from_env, commit_message = upload.private, upload.token, upload.token_from_env, upload.commit_message
    from builders._card import BENCHMARK_FILE, eval_yaml_refused

    check_repo_id(repo_id)
    files = folder_files(folder)
    if not eval_yaml:
        files.pop(BENCHMARK_FILE, None)
    options = {"private": private, "token": token, "token_from_env": token_from_env, "api": api,
               "commit_message": commit_message or "Upload LFRQA exported by rag-qa-arena"}
    try:
        return upload_files(repo_id, files, **options)
    except HubRefusedError as refusal:
        names_it = "eval.yaml" in refusal.reason or "evaluation_framework" in refusal.reason
        refused_file = refusal.status in (400, 422) or (names_it and refusal.status not in (401, 403))
        if BENCHMARK_FILE not in files or not refused_file:
            raise
        url = upload_files(repo_id, {k: v for k, v in files.items() if k != BENCHMARK_FILE}, **options)
        (on_note or (lambda line: None))(eval_yaml_refused(refusal.reason))
        return url


def write_dry_run(folder: str | os.PathLike, out: str | os.PathLike, *, what: str = "the upload",
                  leave_out: Iterable[str] = ()) -> list[str]:
    """What a push of ``folder`` would commit, secret-scanned as the push scans it, written to ``out``
    (new or empty; nothing is copied when it is ``folder`` itself). ``leave_out``: paths in the repo
    not pushed (left alone in ``folder``). Returns the paths in the repo."""
    files = folder_files(folder)
    for name in leave_out:
        files.pop(name, None)
    upload_operations(files, what=what)
    out = Path(out)
    if out.resolve() != Path(folder).resolve():
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise FileExistsError(f"{out} exists and is not an empty folder: choose a new or empty folder for --dry-run")
        for name, path in files.items():
            target = out / name
            make_folder(target.parent, target=target)
            target.write_bytes(path.read_bytes())
    return sorted(files)


def check_hub_access(repo_id: str, *, token: str | None = None, token_from_env: bool = False, api=None) -> str:
    """The token, once the Hub has accepted it (``whoami``): what a push checks before it spends
    time preparing files. Errors are one line naming the fix (no token, offline, no network,
    token refused)."""
    check_repo_id(repo_id)
    token = resolve_token(token, from_env=token_from_env)
    with hub_errors(repo_id, token):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        api.whoami(token=token)
    return token


def _connection_errors() -> tuple[type[BaseException], ...]:
    """The network errors of the HTTP client huggingface_hub uses: requests in 0.x, httpx in 1.x,
    its fork httpx2 in 2.x (whichever of them is installed)."""
    import importlib

    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, names in (("httpx2", ("TransportError",)), ("httpx", ("TransportError",)),
                          ("requests.exceptions", ("ConnectionError", "Timeout"))):
        with contextlib.suppress(ImportError):
            found = importlib.import_module(module)
            errors += [getattr(found, name) for name in names]
    return tuple(errors)


def hub_secrets(token: str | None = None) -> list[str]:
    """What a Hub error message must never show: ``token``, the token huggingface_hub would use,
    and the API-key variables of this environment."""
    found = [token, *env_secrets()]
    with contextlib.suppress(Exception):
        from huggingface_hub import get_token

        found.append(get_token())
    return [value for value in found if value]


def _reason(error: BaseException, token: str | None) -> str:
    """The first line of a Hub error, without any form of a credential (the Hub may quote the
    request's Authorization header in a 401)."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    text = re.sub(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/\-]{8,}=*", r"\1 ***", text)
    return redact_secrets(text, *hub_secrets(token))


@contextlib.contextmanager
def hub_errors(repo_id: str, token: str | None = None) -> Iterator[None]:
    """Turn a failed Hub call (offline mode, no network, token rejected, no write access) into a
    one-line :class:`RagQaArenaError` naming the repo and the fix; other errors pass through.
    The Hub's words are kept without any form of ``token`` (or of the environment's keys)."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    try:
        yield
    except OfflineModeIsEnabled:
        raise RagQaArenaError(f"cannot upload to {repo_id}: HF_HUB_OFFLINE is set; unset it to reach the Hub") from None
    except HfHubHTTPError as error:
        status = getattr(getattr(error, "response", None), "status_code", None)
        if status in (401, 403):
            fix = ("check the token (HF_TOKEN or `hf auth login`): it needs write access to "
                   f"{repo_id.split('/')[0]}")
        else:
            fix = "check the repo id, then run the same command again"
        reason = _reason(error, token)
        raise HubRefusedError(f"the Hugging Face Hub refused the upload to {repo_id} (HTTP {status}): {reason}; {fix}",
                              status=status, reason=reason) from None
    except _connection_errors():
        raise RagQaArenaError(f"cannot reach the Hugging Face Hub to upload to {repo_id}: check the network "
                              "(and HF_ENDPOINT), then run the same command again") from None


@contextlib.contextmanager
def hub_download_errors(repo_id: str, revision: str | None = None) -> Iterator[None]:
    """Turn a failed download of the dataset repo ``repo_id`` (no such repo or revision, offline and
    not cached, no network) into a one-line :class:`RagQaArenaError` naming the repo and the fix."""
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    at = f"{repo_id}@{revision}" if revision else repo_id
    also = f" (no local folder {repo_id} exists either)"
    try:
        yield
    except RevisionNotFoundError:
        raise RagQaArenaError(f"the Hub dataset repo {repo_id} has no revision {revision!r}: give a commit, branch "
                              "or tag it has") from None
    except GatedRepoError:
        raise RagQaArenaError(f"the Hub dataset repo {repo_id} is gated: accept its conditions on its Hub page, then "
                              "log in with `hf auth login` (or set HF_TOKEN)") from None
    except RepositoryNotFoundError:
        raise RagQaArenaError(f"no Hub dataset repo {repo_id}{also}, or it is private and the token cannot see it: "
                              "check the name, or log in with `hf auth login` (or set HF_TOKEN)") from None
    except IncompleteSnapshotError:
        raise RagQaArenaError(f"the cached copy of {at} is incomplete and the Hub cannot be reached: run again "
                              "with network access to finish the download") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        if constants.HF_HUB_OFFLINE:
            raise RagQaArenaError(f"cannot download {at}: HF_HUB_OFFLINE is set and no complete copy is cached"
                                  f"{also}; unset HF_HUB_OFFLINE to reach the Hub, or give a local folder") from None
        raise RagQaArenaError(f"cannot reach the Hugging Face Hub to download {at} and no complete copy is cached"
                              f"{also}: check the network (and HF_ENDPOINT), then run the same command again") from None
    except HfHubHTTPError as error:
        status = getattr(getattr(error, "response", None), "status_code", None)
        reason = _reason(error, None)
        raise RagQaArenaError(f"the Hugging Face Hub refused the download of {at} (HTTP {status}): {reason}; check "
                              "the repo id and the token (HF_TOKEN or `hf auth login`)") from None
    except _connection_errors():
        raise RagQaArenaError(f"cannot reach the Hugging Face Hub to download {at}: check the network (and "
                              "HF_ENDPOINT), then run the same command again") from None

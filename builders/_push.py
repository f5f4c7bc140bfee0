"""Upload an exported folder to a Hugging Face Hub dataset repository."""

from __future__ import annotations

import os
from pathlib import Path


def upload_operations(folder: str | os.PathLike) -> list:
    """The ``CommitOperationAdd`` for every file of an exported folder (what a push commits)."""
    from huggingface_hub import CommitOperationAdd

    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(f"{folder} has no README.md: export it first with `rag-qa-arena data export {folder}`")
    return [
        CommitOperationAdd(path_in_repo=path.relative_to(folder).as_posix(), path_or_fileobj=str(path))
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(".partial")
    ]


def push_dataset(folder: str | os.PathLike, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Create (if needed) the dataset repo ``repo_id`` and commit the folder to it; returns the commit URL.

    The token comes from ``token=``, else huggingface_hub's usual places (``HF_TOKEN``, the saved
    login); it is never printed or written.
    """
    from huggingface_hub import HfApi

    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ValueError(f"Repository id {repo_id!r} is not of the form ORG/NAME (e.g. my-org/lfrqa)")
    operations = upload_operations(folder)
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.create_commit(
        repo_id,
        operations=operations,
        commit_message="Upload LFRQA exported by rag-qa-arena",
        repo_type="dataset",
    )
    return commit.commit_url

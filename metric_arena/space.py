"""The RAG-QA Arena ``evaluate`` module as a folder in evaluate's own layout, and as a Hub Space.

:func:`export_metric` writes a folder that ``evaluate.load(folder)`` loads from anywhere, with only
this package installed::

    <folder>/<folder name>.py   the module (evaluate.load(DIR) loads DIR/<basename of DIR>.py)
    <folder>/README.md          the metric card; its YAML holds evaluate's metadata (title, tags
                                with evaluate and metric, description) and the Space's (gradio app)
    <folder>/requirements.txt   this package, pinned to its installed version
    <folder>/app.py             evaluate's widget (launch_gradio_widget) on the module next to it

:func:`push_metric` commits the same files (the module named after the Space) to the Space
``ORG/NAME`` through :func:`builders.upload_files` (secret scan, one-line Hub errors), after which
``evaluate.load("ORG/NAME")`` works for anyone with the package installed.

>>> sorted(metric_files("my_arena"))
['README.md', 'app.py', 'my_arena.py', 'requirements.txt']
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from builders import check_repo_id, upload_files
from lfrqa.errors import RagQaArenaError
from lfrqa.files import DISTRIBUTION, package_version

__all__ = ["METRIC_NAME", "MODULE_DIR", "SPACE_SDK", "export_metric", "metric_files", "push_metric"]

#: The module's own name (the file in :data:`MODULE_DIR`, and the default Space name).
METRIC_NAME = "rag_qa_arena"
#: The packaged module folder, ``metric_arena.METRIC_PATH``.
MODULE_DIR = Path(__file__).resolve().parent / METRIC_NAME
#: The Space SDK of evaluate's widget.
SPACE_SDK = "gradio"

# evaluate imports the module by its file name: letters, digits, "_", "-" and "." in a Hub name
# ("-" and "." are fine for importlib, which evaluate uses); no path separators.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")

_APP = '''"""Widget of the RAG-QA Arena metric (evaluate's gradio app) on the module next to this file.

Judging needs a judge: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible
server) as secrets of the Space.
"""

from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(str(Path(__file__).resolve().with_name({module_file!r})))
launch_gradio_widget(module)
'''


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.endswith(".py"):
        raise RagQaArenaError(
            f"Bad module name {name!r}: the folder (or Space) name becomes the module file <name>.py, so use "
            f"letters, digits, '_', '-' and '.' (e.g. {METRIC_NAME})"
        )
    return name


def metric_files(name: str = METRIC_NAME) -> dict[str, bytes]:
    """``{path: content}`` of the module folder for a module called ``name`` (no disk, no network)."""
    _check_name(name)
    version = package_version()
    if version == "unknown":
        raise RagQaArenaError(
            f"requirements.txt pins this package's version, but {DISTRIBUTION} is not installed here "
            "(a bare source tree): install it first (pip install .)"
        )
    module = (MODULE_DIR / f"{METRIC_NAME}.py").read_bytes()
    card = (MODULE_DIR / "README.md").read_bytes()
    requirements = f"{DISTRIBUTION}=={version}\n"
    app = _APP.format(module_file=f"{name}.py")
    return {
        f"{name}.py": module,
        "README.md": card,
        "requirements.txt": requirements.encode("utf-8"),
        "app.py": app.encode("utf-8"),
    }


def export_metric(out: str | os.PathLike, *, name: str | None = None) -> Path:
    """Write the module folder to ``out`` (new or empty); the module is named after the folder
    unless ``name`` is given (then ``evaluate.load(out/name.py)`` loads it). Returns the folder.

    >>> export_metric("rag_qa_arena")  # doctest: +SKIP
    PosixPath('rag_qa_arena')
    >>> evaluate.load("rag_qa_arena")  # from the folder holding it  # doctest: +SKIP
    """
    out = Path(out)
    files = metric_files(_check_name(name if name is not None else out.resolve().name))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder: choose a new or empty folder to export into")
    out.mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        (out / path).write_bytes(data)
    return out


def push_metric(
    repo_id: str,
    *,
    private: bool = False,
    token: str | None = None,
    token_from_env: bool = False,
    commit_message: str | None = None,
    api=None,
) -> str:
    """Upload the module folder to the Space ``repo_id`` (``ORG/NAME``, created as a gradio Space if
    missing; the module is ``NAME.py``) in one commit; returns the commit URL. Then
    ``evaluate.load("ORG/NAME")`` loads it. The token comes from ``token=``, ``$HF_TOKEN`` or
    ``hf auth login`` and is never printed or written; ``api`` stands in for ``HfApi`` in tests.
    """
    check_repo_id(repo_id)
    files = metric_files(_check_name(repo_id.split("/")[1]))
    message = commit_message or f"Upload the RAG-QA Arena evaluate module ({DISTRIBUTION} {package_version()})"
    return upload_files(repo_id, files, repo_type="space", space_sdk=SPACE_SDK, private=private, token=token,
                        token_from_env=token_from_env, commit_message=message, api=api)

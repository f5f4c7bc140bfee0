"""The RAG-QA Arena ``evaluate`` module as a folder in evaluate's own layout, and as a Hub Space.

:func:`export_metric` writes a folder that ``evaluate.load(folder)`` loads from anywhere, with only
this package installed::

    <folder>/<folder name>.py   the module (evaluate.load(DIR) loads DIR/<basename of DIR>.py)
    <folder>/README.md          the metric card; its YAML holds evaluate's metadata (title, tags
                                with evaluate and metric, description) and the Space's (gradio app)
    <folder>/requirements.txt   ``--find-links .`` and this package pinned to the version of the wheel
                                beside it (or the user's own requirements file, then no wheel)
    <folder>/rag_qa_arena-<version>-py3-none-any.whl
                                a wheel of this package, built from its source tree (or given), so
                                ``pip install -r <folder>/requirements.txt`` installs the package from
                                the folder and only its dependencies from the package index
    <folder>/app.py             evaluate's widget (launch_gradio_widget) on the module next to it

:func:`push_metric` commits the same files (the module named after the Space) to the Space
``ORG/NAME`` through :func:`builders.upload_files` (secret scan of every file and of the wheel's members,
one-line Hub errors), after which
``evaluate.load("ORG/NAME")`` works for anyone with the package installed.

>>> sorted(metric_files("my_arena"))  # doctest: +ELLIPSIS
['README.md', 'app.py', 'my_arena.py', 'rag_qa_arena-...-py3-none-any.whl', 'requirements.txt']
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from builders import HUB_UPLOAD_KEYWORDS, HubUpload, check_repo_id, scan_files, upload_files
from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import DISTRIBUTION, make_folder, package_version

__all__ = ["METRIC_NAME", "MODULE_DIR", "SPACE_SDK", "build_wheel", "export_metric", "metric_files", "push_metric"]

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


def metric_files(
    name: str = METRIC_NAME,
    *,
    wheel: str | os.PathLike | None = None,
    requirements: str | os.PathLike | None = None,
) -> dict[str, bytes]:
    """``{path: content}`` of the module folder for a module called ``name`` (no network).

    The package travels with the folder: ``wheel`` (a wheel of this package; default: one built
    from its source tree, see :func:`build_wheel`) is shipped beside ``requirements.txt``, which
    installs it from the folder (``--find-links .``). With ``requirements`` (a requirements file of
    your own, e.g. pinning a release or a git URL) that file becomes ``requirements.txt`` and no
    wheel is shipped.
    """
    _check_name(name)
    if wheel is not None and requirements is not None:
        raise RagQaArenaError("Give a wheel to ship (--wheel) or your own requirements file (--requirement), not both")
    files = {}
    if requirements is not None:
        path = Path(requirements)
        if not path.is_file():
            raise FileNotFoundError(f"Requirements file {path} does not exist: give a pip requirements file")
        requirements_text = path.read_text(encoding="utf-8")
    else:
        wheel = Path(wheel) if wheel is not None else build_wheel()
        version = _wheel_version(wheel)
        files[wheel.name] = wheel.read_bytes()
        requirements_text = (f"# {DISTRIBUTION} from the wheel in this folder, its dependencies from the package index\n"
                             f"--find-links .\n{DISTRIBUTION}=={version}\n")
    module = (MODULE_DIR / f"{METRIC_NAME}.py").read_bytes()
    card = (MODULE_DIR / "README.md").read_bytes()
    app = _APP.format(module_file=f"{name}.py")
    return {
        f"{name}.py": module,
        "README.md": card,
        "requirements.txt": requirements_text.encode("utf-8"),
        "app.py": app.encode("utf-8"),
        **files,
    }


def _wheel_version(wheel: Path) -> str:
    """The version in a wheel's file name, once the file is checked to be a wheel of this package."""
    parts = wheel.name[:-4].split("-") if wheel.name.endswith(".whl") else []
    if len(parts) < 5 or parts[0].lower().replace("-", "_") != DISTRIBUTION.replace("-", "_"):
        raise RagQaArenaError(f"{wheel} is not a wheel of {DISTRIBUTION} (expected "
                              f"{DISTRIBUTION.replace('-', '_')}-<version>-py3-none-any.whl): build one with "
                              "`python -m build --wheel` in the source tree")
    if not wheel.is_file():
        raise FileNotFoundError(f"Wheel {wheel} does not exist: build it with `python -m build --wheel`")
    return parts[1]


def build_wheel() -> Path:
    """A wheel of this package built from its source tree (a copy of it, so the tree gains no
    ``build/`` folder), once per process. Needs a source checkout (``pyproject.toml`` beside the
    packages) and ``setuptools``; an install without one is told to pass a wheel or requirements."""
    root = Path(__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or f'name = "{DISTRIBUTION}"' not in pyproject.read_text(encoding="utf-8"):
        raise RagQaArenaError(
            f"The metric folder ships a wheel of {DISTRIBUTION}, built from its source tree, and this install has "
            "none: pass --wheel FILE (a wheel of the package, e.g. from `python -m build --wheel`) or "
            "--requirement REQ (your own requirements file)"
        )
    return _build_wheel_cached(str(root), pyproject.stat().st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _build_wheel_cached(root: str, _stamp: int) -> Path:
    work = Path(tempfile.mkdtemp(prefix="rag-qa-arena-wheel-"))
    atexit.register(shutil.rmtree, work, True)
    source = work / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for entry in Path(root).iterdir():
        if entry.name in ("pyproject.toml", "README.md", "dataset_card.md", "LICENSE", "setup.cfg", "MANIFEST.in"):
            source.mkdir(exist_ok=True)
            shutil.copy2(entry, source / entry.name)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name != "tests":
            shutil.copytree(entry, source / entry.name, ignore=ignore)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w",
         str(work / "dist"), str(source)],
        capture_output=True, text=True,
    )
    wheels = sorted((work / "dist").glob("*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no wheel written"])[-1]
        raise RagQaArenaError(f"Could not build a wheel of {DISTRIBUTION} from {root}: {last}. Install setuptools "
                              "and wheel (pip install setuptools wheel), or pass --wheel FILE or --requirement REQ")
    return wheels[0]


def export_metric(
    out: str | os.PathLike,
    *,
    name: str | None = None,
    wheel: str | os.PathLike | None = None,
    requirements: str | os.PathLike | None = None,
) -> Path:
    """Write the module folder to ``out`` (new or empty); the module is named after the folder
    unless ``name`` is given (then ``evaluate.load(out/name.py)`` loads it). ``wheel`` and
    ``requirements``: see :func:`metric_files`. Every file, and every member of the wheel, is scanned
    for credentials first (:func:`builders.scan_files`, the scan :func:`push_metric` runs too). Returns the folder.

    >>> export_metric("rag_qa_arena")  # doctest: +SKIP
    PosixPath('rag_qa_arena')
    >>> evaluate.load("rag_qa_arena")  # from the folder holding it  # doctest: +SKIP
    """
    out = Path(out)
    name = _check_name(name if name is not None else out.resolve().name)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder: choose a new or empty folder to export into")
    files = metric_files(name, wheel=wheel, requirements=requirements)
    scan_files(files, what=f"the metric folder {out}")  # the push's scan, wheel members included
    make_folder(out)
    for path, data in files.items():
        (out / path).write_bytes(data)
    return out


@grouped_keywords("upload", HubUpload, HUB_UPLOAD_KEYWORDS)
def push_metric(
    repo_id: str,
    *,
    upload: HubUpload | None = None,
    wheel: str | os.PathLike | None = None,
    requirements: str | os.PathLike | None = None,
    api=None,
) -> str:
    """Upload the module folder (:func:`metric_files`: the package's wheel or your requirements
    file travels with it) to the Space ``repo_id`` (``ORG/NAME``, created as a gradio Space if
    missing; the module is ``NAME.py``) in one commit; returns the commit URL. Then
    ``evaluate.load("ORG/NAME")`` loads it. The token comes from ``token=``, ``$HF_TOKEN`` or
    ``hf auth login`` and is never printed or written; ``api`` stands in for ``HfApi`` in tests.
    """
    upload = upload if upload is not None else HubUpload()
    private, token, token_from_env, commit_message = upload.private, upload.token, upload.token_from_env, upload.commit_message
    check_repo_id(repo_id)
    files = metric_files(_check_name(repo_id.split("/")[1]), wheel=wheel, requirements=requirements)
    message = commit_message or f"Upload the RAG-QA Arena evaluate module ({DISTRIBUTION} {package_version()})"
    return upload_files(repo_id, files, repo_type="space", space_sdk=SPACE_SDK, private=private, token=token,
                        token_from_env=token_from_env, commit_message=message, api=api)

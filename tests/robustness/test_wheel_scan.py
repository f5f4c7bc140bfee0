"""The wheel scanned: `metric export` and `metric push` look inside the wheel they ship (each member's
name and text) and at the folder's own files, before anything is written or uploaded. The attack: a
token file and a private key planted inside the package tree, which the wheel built from it carries."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.robustness.helpers import ROOT, cli, subprocess_env
from tests.test_hub_push import RecordingHub

TOKEN = "hf_" + "Zq8RtY2uIo9PaS3dFg4HjK5lZx6CvB7nMq"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"
PACKAGES = ("lfrqa", "builders", "retrieval", "metric_arena", "rag_qa_arena")


@pytest.fixture(scope="module")
def clean_wheel(tmp_path_factory) -> Path:
    from metric_arena.space import build_wheel

    return Path(shutil.copy(build_wheel(), tmp_path_factory.mktemp("wheel")))


def _hostile_wheel(clean: Path, folder: Path) -> Path:
    """The package's own wheel with a token file and a key added, as a wheel of a planted tree would be."""
    wheel = folder / clean.name
    shutil.copy(clean, wheel)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("metric_arena/report/templates/token", TOKEN + "\n")
        archive.writestr("metric_arena/deploy.py", f'KEY = """{PRIVATE_KEY}"""\n')
    return wheel


def _one_line(code: int, err: str) -> str:
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, err)
    assert TOKEN not in err and "b3BlbnNz" not in err
    return err


def test_the_packages_own_wheel_passes_the_scan(clean_wheel):
    from builders import scan_files

    scan_files({clean_wheel.name: clean_wheel}, what="the wheel")  # its sources talk about keys, hold none


def test_export_and_push_refuse_a_wheel_holding_a_token_and_a_key(clean_wheel, tmp_path, capsys, monkeypatch):
    wheel = _hostile_wheel(clean_wheel, tmp_path)
    err = _one_line(*cli(["metric", "export", tmp_path / "out", "--wheel", wheel], capsys)[::2])
    assert f"{wheel.name}!metric_arena/report/templates/token: a file named like a credential" in err
    assert f"{wheel.name}!metric_arena/deploy.py line 1: a private key" in err
    assert not (tmp_path / "out").exists()

    err = _one_line(*cli(["metric", "push", "org/arena", "--wheel", wheel, "--dry-run", tmp_path / "preview"],
                         capsys)[::2])
    assert "deploy.py line 1: a private key" in err and not (tmp_path / "preview").exists()

    import huggingface_hub

    hub = RecordingHub()  # the Hub stand-in, reached through huggingface_hub.HfApi
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: hub)
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)
    err = _one_line(*cli(["metric", "push", "org/arena", "--wheel", wheel], capsys)[::2])
    assert "Refusing to upload to org/arena" in err and "templates/token" in err and hub.calls == []
    assert cli(["metric", "push", "org/arena", "--wheel", clean_wheel], capsys)[0] == 0  # the clean one goes up
    assert [call[0] for call in hub.calls] == ["create_repo", "create_commit"]


def test_a_token_in_a_member_is_found_whatever_its_name(clean_wheel, tmp_path, capsys):
    wheel = tmp_path / clean_wheel.name
    shutil.copy(clean_wheel, wheel)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("metric_arena/settings.py", f'HUB = "{TOKEN}"\n')
    err = _one_line(*cli(["metric", "export", tmp_path / "out", "--wheel", wheel], capsys)[::2])
    assert f"{wheel.name}!metric_arena/settings.py line 1: a Hugging Face token" in err


def test_export_scans_the_folders_own_files(tmp_path, capsys):
    requirements = tmp_path / "req.txt"
    requirements.write_text("--extra-index-url https://me:s3cret-pass@pypi.example/simple\nrag-qa-arena==0.1.0\n")
    err = _one_line(*cli(["metric", "export", tmp_path / "out", "--requirement", requirements], capsys)[::2])
    assert "requirements.txt line 1: credentials in a URL" in err and "s3cret" not in err
    assert not (tmp_path / "out").exists()


def test_files_planted_in_the_package_tree_never_leave(tmp_path):
    """The attack as the red team ran it: the default wheel, built from a package tree holding a token
    file and a key, through the real CLI in a subprocess (its package is the planted copy)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (tree / "metric_arena" / "report" / "templates" / "token").write_text(TOKEN + "\n")
    (tree / "metric_arena" / "rag_qa_arena" / "keys.py").write_text(f'KEY = """{PRIVATE_KEY}"""\n')
    env = subprocess_env(PYTHONPATH=str(tree), HF_TOKEN="hf_" + "x" * 34)
    for argv in (["metric", "export", str(tmp_path / "out")], ["metric", "push", "org/arena"]):
        done = subprocess.run([sys.executable, "-m", "rag_qa_arena", *argv], cwd=tree, env=env,
                              capture_output=True, text=True, timeout=300)
        err = _one_line(done.returncode, done.stderr)
        assert "!metric_arena/report/templates/token: a file named like a credential" in err
        assert "!metric_arena/rag_qa_arena/keys.py line 1: a private key" in err
        assert "HF_HUB_OFFLINE" not in err  # refused before the (offline) Hub was asked anything
    assert not (tmp_path / "out").exists()

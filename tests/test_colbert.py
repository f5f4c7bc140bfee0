"""ColBERTv2 through colbert-ai on CPU with a tiny random checkpoint made offline (slow: indexing,
and a one-time ~100 s compile of ColBERT's C++ extensions, cached in $TORCH_EXTENSIONS_DIR)."""

from __future__ import annotations

import importlib.util
import json
import random
import shutil

import pytest

if importlib.util.find_spec("colbert") is None or importlib.util.find_spec("faiss") is None:
    pytest.skip('needs pip install "rag-qa-arena[colbert]"', allow_module_level=True)  # checked without importing

from rag_qa_arena.cli import main  # noqa: E402
from retrieval import ColBERTRetriever, Retriever  # noqa: E402
from retrieval._colbert import make_tiny_checkpoint  # noqa: E402
from tests.test_cmd_retrieve import writing_dir  # noqa: E402,F401  (fixture)

pytestmark = pytest.mark.slow

WORDS = [f"w{i}" for i in range(2000)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    words = WORDS + [f"filler{i}" for i in range(400)]
    return make_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny-colbert", words=words)


@pytest.fixture(scope="module")
def passages():
    rng = random.Random(0)
    rows = [{"pid": f"{i}-0", "text": " ".join(rng.choice(WORDS) for _ in range(40))} for i in range(300)]
    rows[7]["text"] = "w1\tw2\nw3 " + rows[7]["text"]  # tabs/newlines must not break collection.tsv
    return rows


def test_tiny_checkpoint_is_a_colbert_checkpoint(checkpoint):
    metadata = json.loads((checkpoint / "artifact.metadata").read_text())
    assert metadata["dim"] == 32
    vocab = (checkpoint / "vocab.txt").read_text().split("\n")
    assert "[unused0]" in vocab and "[unused1]" in vocab and "w1999" in vocab


def test_loaded_weights_equal_the_saved_ones(checkpoint):
    """colbert-ai builds HF_ColBERT under transformers 5 (retrieval/_colbert_compat.py), and loading
    neither drops nor re-initialises a saved weight."""
    import torch
    from colbert.infra import ColBERTConfig
    from colbert.modeling.base_colbert import BaseColBERT
    from safetensors.torch import load_file

    saved = load_file(str(checkpoint / "model.safetensors"))
    loaded = BaseColBERT(str(checkpoint), colbert_config=ColBERTConfig()).model.state_dict()
    assert "linear.weight" in saved and saved["linear.weight"].shape[0] == 32
    assert set(loaded) == set(saved)
    assert all(torch.equal(loaded[key], saved[key]) for key in saved)


def test_a_plain_bert_checkpoint_keeps_its_encoder_weights(tmp_path):
    """Loading a BertModel folder into ColBERT keeps the encoder's weights and adds a fresh linear layer."""
    import torch
    from colbert.infra import ColBERTConfig
    from colbert.modeling.base_colbert import BaseColBERT
    from transformers import BertModel

    folder = _bert_only(make_tiny_checkpoint(tmp_path / "tiny", words=["alpha"]), tmp_path / "bert")
    bert = BertModel.from_pretrained(folder)
    model = BaseColBERT(folder, colbert_config=ColBERTConfig(dim=16)).model
    weights = model.state_dict()
    assert all(torch.equal(weights[f"bert.{key}"], value) for key, value in bert.state_dict().items())
    assert weights["linear.weight"].shape == (16, bert.config.hidden_size)
    assert weights["linear.weight"].abs().sum() > 0  # initialised once, by post_init()


def test_hf_colbert_can_be_built_directly(checkpoint):
    from colbert.infra import ColBERTConfig
    from colbert.modeling import base_colbert, hf_colbert
    from transformers import AutoConfig

    assert base_colbert.class_factory is hf_colbert.class_factory  # both modules use the wrapped factory
    cls = hf_colbert.class_factory(str(checkpoint))
    model = cls(AutoConfig.from_pretrained(str(checkpoint)), ColBERTConfig(dim=8))
    assert model.linear.weight.shape[0] == 8 and isinstance(model.all_tied_weights_keys, dict)


def _bert_only(tiny, target):
    """A folder with the tiny checkpoint's tokenizer and a BertModel (no ColBERT layer) of its own."""
    from transformers import BertConfig, BertModel

    shutil.copytree(tiny, target)
    for name in ("model.safetensors", "artifact.metadata"):
        (target / name).unlink()
    config = BertConfig.from_pretrained(str(tiny))
    config.architectures = None
    BertModel(config).save_pretrained(str(target))
    return str(target)


def test_index_search_save_load(checkpoint, passages, tmp_path, capfd):
    retriever = ColBERTRetriever(checkpoint, index_dir=tmp_path / "built", show_progress=False)
    retriever.index(passages)
    assert capfd.readouterr().out == ""  # ColBERT's and faiss' chatter goes to stderr
    built = tmp_path / "built"
    assert json.loads((built / "pids.json").read_text()) == [p["pid"] for p in passages]
    assert len((built / "collection.tsv").read_text(encoding="utf-8").splitlines()) == len(passages)
    assert json.loads((built / "retriever.json").read_text())["settings"]["nbits"] == 2
    assert (built / "plaid" / "metadata.json").is_file()

    queries = {f"q{i}": passages[i]["text"] for i in range(0, 300, 10)}
    results = retriever.search(queries, k=5)
    assert set(results) == set(queries)
    for ranked in results.values():
        assert len(ranked) == 5 and len({pid for pid, _ in ranked}) == 5
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
        assert ranked == sorted(ranked, key=lambda pair: (-pair[1], pair[0]))
    assert sum(results[f"q{i}"][0][0] == f"{i}-0" for i in range(0, 300, 10)) >= 27  # a passage finds itself

    saved = retriever.save(tmp_path / "moved")
    shutil.rmtree(built)  # the saved copy must stand alone
    loaded = Retriever.load(saved, show_progress=False)
    assert isinstance(loaded, ColBERTRetriever) and loaded.pids == retriever.pids
    assert loaded.search(queries, k=5) == results
    assert 0 < len(loaded.search({"big": "w1 w2"}, k=1000)["big"]) <= len(passages)  # k beyond the corpus


def test_index_in_a_temporary_folder_then_save(checkpoint, passages, tmp_path):
    retriever = ColBERTRetriever(checkpoint, show_progress=False)
    retriever.index(passages[:120])
    path = retriever.save(tmp_path / "index")
    assert sorted(p.name for p in path.iterdir()) == ["collection.tsv", "pids.json", "plaid", "retriever.json"]
    again = ColBERTRetriever.load(path, show_progress=False)
    query = {"q": passages[5]["text"]}
    assert again.search(query, k=3) == retriever.search(query, k=3)


def test_cli_with_colbert(writing_dir, checkpoint, tmp_path, capsys):  # noqa: F811
    data_dir, chosen = writing_dir
    out, index_dir = tmp_path / "writing.colbert.jsonl", tmp_path / "index"
    args = ["retrieve", "--domain", "writing", "--retriever", "colbert", "--checkpoint", str(checkpoint),
            "--corpus-dir", str(data_dir), "--index-dir", str(index_dir), "--limit", "40", "--k", "3",
            "--gpus", "0", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 40
    assert all(len(r["passages"]) == 3 and [p["rank"] for p in r["passages"]] == [1, 2, 3] for r in records)
    assert all(p["pid"].startswith(p["doc_id"] + "-") for r in records for p in r["passages"])
    metrics = json.loads((tmp_path / "writing.colbert.metrics.json").read_text())
    # a tiny corpus: hit rates over the questions whose gold documents it holds, and it says how incomplete it is
    assert metrics["retriever"] == "colbert" and set(metrics) >= {"hit@1", "recall@3"}
    assert metrics["corpus"]["incomplete"] and metrics["n"] <= 40
    assert "colbert on writing" in capsys.readouterr().out

    stamp = (index_dir / "pids.json").stat().st_mtime_ns
    assert main(args[:-1] + [str(tmp_path / "again.jsonl")]) == 0  # reuses the index
    assert (index_dir / "pids.json").stat().st_mtime_ns == stamp
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()


def test_bad_gpu_request(checkpoint, passages):
    import torch

    retriever = ColBERTRetriever(checkpoint, gpus=torch.cuda.device_count() + 1, show_progress=False)
    with pytest.raises(ValueError, match="GPU"):
        retriever.index(passages[:10])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="nranks=2 needs GPUs"):
            ColBERTRetriever(checkpoint, nranks=2, show_progress=False).index(passages[:10])


def test_a_shared_colbert_index_is_searched_as_built(writing_dir, checkpoint, tmp_path, monkeypatch, capsys):  # noqa: F811
    """`retrieve` writes a manifest naming the checkpoint; the pushed folder (no collection.tsv, no
    logs) gives the fresh build's results without indexing; another checkpoint is refused."""
    data_dir, _ = writing_dir
    index_dir, shared = tmp_path / "index", tmp_path / "shared"
    base = ["retrieve", "--domain", "writing", "--corpus-dir", str(data_dir), "--limit", "20", "--k", "3",
            "--no-progress"]
    assert main(base + ["--retriever", "colbert", "--checkpoint", str(checkpoint), "--index-dir", str(index_dir),
                        "--gpus", "0", "--out", str(tmp_path / "fresh.jsonl")]) == 0
    manifest = json.loads((index_dir / "manifest.json").read_text())
    assert manifest["retriever"]["kind"] == "colbert" and manifest["retriever"]["library"] == "colbert-ai"
    assert manifest["checkpoint"]["name"] == "tiny-colbert" and manifest["checkpoint"]["revision"].startswith("sha256:")
    assert manifest["settings"]["nbits"] == 2 and manifest["settings"]["dim"] == 32
    assert manifest["settings"]["doc_maxlen"] == 128
    assert "plaid/metadata.json" in manifest["files"] and "pids.json" in manifest["files"]
    assert not any(name.startswith("runs/") or name == "collection.tsv" for name in manifest["files"])
    assert main(["index", "push", str(index_dir), "--repo", "org/writing-colbert", "--dry-run", str(shared)]) == 0
    assert not (shared / "collection.tsv").exists() and (shared / "README.md").is_file()
    before = sorted(p.relative_to(shared).as_posix() for p in shared.rglob("*"))

    def refuse(self, passages):
        raise AssertionError("an index was built")

    monkeypatch.setattr(ColBERTRetriever, "index", refuse)
    capsys.readouterr()
    assert main(base + ["--index-from", str(shared), "--out", str(tmp_path / "shared.jsonl")]) == 0
    assert (tmp_path / "shared.jsonl").read_text() == (tmp_path / "fresh.jsonl").read_text()
    assert sorted(p.relative_to(shared).as_posix() for p in shared.rglob("*")) == before  # nothing written there

    other = make_tiny_checkpoint(tmp_path / "other-colbert", words=WORDS, seed=1)
    capsys.readouterr()
    assert main(base + ["--index-from", str(shared), "--checkpoint", str(other), "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was encoded with checkpoint 'tiny-colbert'" in err and "--trust-index" in err
    assert main(base + ["--index-from", str(shared), "--retriever", "bm25", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "is a 'colbert' index, not a 'bm25' one" in capsys.readouterr().err

"""CPU speed of the ``nli:`` entailer for the small NLI checkpoints a user would pick, measured offline.

This machine cannot download weights, so each checkpoint is rebuilt with its published architecture
(its ``config.json``: DeBERTa-v3 sizes) and random weights: the same computation, so the same speed; the
verdicts are meaningless and not looked at. Each model scores ``--pairs`` premise/hypothesis pairs of
``--tokens`` tokens (a passage and a sentence) in batches of 16 through
:class:`metric_arena.citations.NliEntailment`'s forward pass, on the CPU threads torch is given.
Prints parameters, fp32 size and pairs per second; exits 1 when a model gives no verdicts.

    python benchmarks/nli_speed.py            # xsmall, small, base, large
    python benchmarks/nli_speed.py --quick    # a tiny model only (seconds)
"""

from __future__ import annotations

import argparse
import sys
import time

import _setup  # noqa: F401 - this checkout first on sys.path
from _setup import quick_args  # noqa: E402

#: Published architectures (hidden size, layers, heads, feed-forward), DeBERTa-v3's 128,100-token vocabulary.
MODELS = {
    "cross-encoder/nli-deberta-v3-xsmall": (384, 12, 6, 1536),
    "cross-encoder/nli-deberta-v3-small": (768, 6, 12, 3072),
    "cross-encoder/nli-deberta-v3-base (and MoritzLaurer/DeBERTa-v3-base-mnli-fever-anli)": (768, 12, 12, 3072),
    "cross-encoder/nli-deberta-v3-large": (1024, 24, 16, 4096),
}
TINY = {"tiny (test size)": (16, 1, 2, 32)}


def build(sizes, vocab):
    import transformers

    hidden, layers, heads, ffn = sizes
    config = transformers.DebertaV2Config(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=ffn, max_position_embeddings=512, relative_attention=True, position_buckets=256,
        pos_att_type=["p2c", "c2p"], position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True,
        type_vocab_size=0, num_labels=3, id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
        label2id={"contradiction": 0, "entailment": 1, "neutral": 2})
    return transformers.DebertaV2ForSequenceClassification(config).eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=256)
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    try:
        import torch
    except ImportError:
        print("torch and transformers are not installed (pip install 'rag-qa-arena[hf]'): nothing to measure")
        return 0
    models, pairs = (TINY, 16) if args.quick else (MODELS, args.pairs)
    vocab = 1000 if args.quick else 128_100
    torch.manual_seed(0)
    print(f"{pairs} pairs of {args.tokens} tokens, batches of 16, {torch.get_num_threads()} CPU threads")
    ok = True
    for name, sizes in models.items():
        model = build(sizes, vocab)
        params = sum(p.numel() for p in model.parameters())
        ids = torch.randint(5, vocab, (pairs, args.tokens))
        with torch.no_grad():
            model(input_ids=ids[:2], attention_mask=torch.ones_like(ids[:2]))  # warm-up, not timed
        started, verdicts = time.perf_counter(), []
        with torch.no_grad():
            for start in range(0, pairs, 16):
                batch = ids[start:start + 16]
                logits = model(input_ids=batch, attention_mask=torch.ones_like(batch)).logits
                verdicts += (logits.argmax(-1) == 1).tolist()
        elapsed = time.perf_counter() - started
        ok &= len(verdicts) == pairs
        print(f"{name}: {params / 1e6:.0f}M parameters, {params * 4 / 2**20:.0f} MiB fp32, "
              f"{pairs / elapsed:.1f} pairs/s ({elapsed:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Citation scores under a growing share of randomly reassigned citations: do they fall monotonically?

LFRQA's own answers, with their own per-sentence citations, are the known truth. Each answer is shown its gold
documents plus as many distractor passages (non-gold); a gold document's passage text is the sentences of
LFRQA's answer that cite it, a distractor's is unrelated words, and the entailer says yes when every word of a
sentence is in the premise, so that with the true citations every cited sentence is supported. Then each
citation is, with probability p (0, 25, 50, 75, 100%), replaced by a passage drawn uniformly from those shown,
and the answers scored again (reference scores and ALCE's, in process). Prints the mean of each score per p and
exits 1 when a score does not fall from one p to the next (or reference recall/precision are not 1.0 at p = 0),
or when answers stripped of their markers get a number instead of a note.

    python benchmarks/citation_degradation.py            # every LFRQA answer with citations
    python benchmarks/citation_degradation.py --quick    # 20 answers per domain
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import time

import _setup  # noqa: F401 - this checkout first on sys.path
from _setup import quick_args  # noqa: E402

SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
FIELDS = ("reference_recall", "reference_precision", "gold_precision", "support", "citation_recall",
          "citation_precision")


class WordEntailer:
    """Entails when every word of the hypothesis is a word of the premise."""

    spec = "benchmark:words"

    async def entail(self, pairs):
        return [set(re.findall(r"\w+", h.lower())) <= set(re.findall(r"\w+", p.lower())) for p, h in pairs]


def cases(limit, seed):
    """``(sentences, passages, reference_docs, gold_docs)`` per LFRQA answer with citations."""
    from metric_arena.citations import ParsedSentence, Passages, lfrqa_cited_answers

    predictions, _ = lfrqa_cited_answers(limit_per_domain=limit)
    rng = random.Random(seed)
    out = []
    for row in predictions:
        gold = [pid.rsplit("-", 1)[0] for pid in row["passages"]]
        sentences = [ParsedSentence(s["text"], tuple(s["citations"])) for s in row["sentences"]]
        texts = {f"{doc}-0": " ".join(s.text for s in sentences if k in s.markers) or "unrelated"
                 for k, doc in enumerate(gold, 1)}
        distractors = [f"distractor{rng.randrange(10**9)}-0" for _ in gold]
        texts.update({pid: "zzz qqq" for pid in distractors})
        pids = tuple(row["passages"]) + tuple(distractors)
        reference = list(dict.fromkeys(gold[k - 1] for s in sentences for k in s.markers))
        out.append((sentences, Passages(pids, {}, texts), reference, gold, row["domain"]))
    return out


def reassign(sentences, n_passages, share, rng):
    from metric_arena.citations import ParsedSentence

    return [ParsedSentence(s.text, tuple(dict.fromkeys(rng.randrange(1, n_passages + 1) if rng.random() < share
                                                       else k for k in s.markers))) for s in sentences]


async def score_all(items, share, seed, strip=False):
    from metric_arena.citations import ParsedSentence, score_answer

    rng, entailer, sums, counts, none_only = random.Random(seed), WordEntailer(), {}, {}, 0
    for sentences, passages, reference, gold, _ in items:
        sentences = ([ParsedSentence(s.text, ()) for s in sentences] if strip
                     else reassign(sentences, len(passages.pids), share, rng))
        scores, _ = await score_answer(sentences, passages, reference_docs=reference, gold_docs=gold,
                                       entailer=entailer)
        none_only += all(scores[f] is None for f in FIELDS)
        for f in FIELDS:
            if scores[f] is not None:
                sums[f] = sums.get(f, 0.0) + scores[f]
                counts[f] = counts.get(f, 0) + 1
    return {f: sums[f] / counts[f] if counts.get(f) else None for f in FIELDS}, none_only


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-domain", type=int, help="answers per domain (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = quick_args(parser)  # --quick: small sizes, seconds (CI: benchmarks/run_quick.py)
    started = time.perf_counter()
    items = cases(20 if args.quick else args.per_domain, args.seed)
    print(f"{len(items):,} LFRQA answers, each shown its gold documents and as many distractors")
    print(f"{'reassigned':>10} " + " ".join(f"{f:>19}" for f in FIELDS))
    rows, ok = [], True
    for share in SHARES:
        means, _ = asyncio.run(score_all(items, share, args.seed))
        rows.append(means)
        print(f"{share:>10.0%} " + " ".join(f"{means[f]:>19.3f}" for f in FIELDS))
    for f in FIELDS:
        values = [r[f] for r in rows]
        if any(later >= earlier for earlier, later in zip(values, values[1:])):
            print(f"NOT MONOTONE: {f} {values}", file=sys.stderr)
            ok = False
    for f in ("reference_recall", "reference_precision", "gold_precision", "support"):
        if rows[0][f] != 1.0:
            print(f"with the true citations {f} is {rows[0][f]}, not 1.0", file=sys.stderr)
            ok = False
    stripped, none_only = asyncio.run(score_all(items, 0.0, args.seed, strip=True))
    print(f"markers removed: {none_only:,} of {len(items):,} answers get no score (a note), means {stripped}")
    if none_only != len(items):
        print("answers without markers got numbers", file=sys.stderr)
        ok = False
    print(f"elapsed {time.perf_counter() - started:.1f} s; {'monotone' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

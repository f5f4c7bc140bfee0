"""The verdict viewer's data: every judged pair of the report's runs as compact rows, with the texts that
can be found, for the HTML page to page through (``templates/leaderboard.js`` renders it).

Run folders hold the verdicts (qid, domain, outcome, which answer was shown first, both answers'
lengths, each judge's reply) but not the texts judged. Those come from elsewhere:

* the systems' answers (and the questions) from their prediction files, ``ViewerOptions.predictions``
  (``report --predictions SYSTEM=FILE``);
* LFRQA's answers and the questions from ``lfrqa.load("all", data_dir=...)`` when ``reference_texts``
  (``report`` does; ``--no-texts`` skips it), for runs against the reference.

What is missing is said in the data's ``notes`` (shown above the viewer). The page stays bounded: each
text is cut to ``max_text_chars`` characters, and when all texts together would exceed
``max_total_chars`` every text is cut further to one common limit that fits; a cut text keeps its
full length, shown beside it. The data travels in a ``<script type="application/json">`` block where
``<``, ``>`` and ``&`` are written as JSON escapes, so no text can close the block.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lfrqa.errors import RagQaArenaError
from metric_arena.report._runs import Run, load_run
from metric_arena.records import VERDICTS_FILE

__all__ = ["ViewerOptions", "verdict_view", "viewer_json"]

_OUTCOME = {"win": 0, "tie": 1, "loss": 2}


@dataclass(frozen=True)
class ViewerOptions:
    """What the verdict viewer of the HTML page shows.

    ``predictions``: ``{system: prediction file}``, the answers it was judged on (questions too, when the
    rows have them); ``reference_texts``: load LFRQA's questions and answers (``lfrqa.load``) for runs
    against the reference; ``max_text_chars``: the most characters of any one text; ``max_total_chars``:
    the most characters of all texts together (texts cut further to fit); ``enabled``: False leaves the
    viewer out of the page."""

    predictions: Mapping[str, str | os.PathLike] = field(default_factory=dict)
    reference_texts: bool = False
    max_text_chars: int = 4000
    max_total_chars: int = 40_000_000
    enabled: bool = True

    def __post_init__(self):
        for name in ("max_text_chars", "max_total_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 100:
                raise RagQaArenaError(f"ViewerOptions {name}={value!r}: give a whole number of characters of at "
                                      "least 100")


class _Texts:
    """Distinct texts by index (a question or LFRQA's answer shared by several verdicts is stored once)."""

    def __init__(self):
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def add(self, text) -> int:
        if not isinstance(text, str):
            return -1
        if text not in self.index:
            self.index[text] = len(self.items)
            self.items.append(text)
        return self.index[text]


def _common_cut(lengths: list[int], total: int) -> int:
    """The largest limit ``c`` with ``sum(min(n, c)) <= total``."""
    if sum(lengths) <= total:
        return max(lengths, default=0)
    ordered = sorted(lengths)
    spent = 0
    for k, n in enumerate(ordered):
        left = len(ordered) - k  # texts of at least length n
        if spent + n * left > total:
            return max(0, (total - spent) // left)
        spent += n
    return ordered[-1]


def _prediction_rows(path) -> dict[str, dict]:
    from lfrqa.kernel import iter_records
    from metric_arena.records import check_prediction

    rows = {}
    for where, row in iter_records(path, hint='Each line must be one {"qid": ..., "answer": ...} object'):
        checked = check_prediction(row, where)
        rows[checked["qid"]] = checked
    return rows


def _reference_rows(data_dir) -> dict[str, tuple[str, str]]:
    import lfrqa

    dataset = lfrqa.load("all", data_dir=data_dir)
    return {qid: (question, answer) for qid, question, answer in
            zip(dataset["qid"], dataset["question"], dataset["answer"])}


def _full(run: Run) -> list[dict]:
    """``run``'s verdicts with the judges' replies (a lean run is read again from its folder, keeping the
    lengths given to its verdicts in memory)."""
    lean = any("raw" not in j for v in run.verdicts for j in v.get("judgments") or [] if isinstance(j, dict))
    if not (lean and (run.path / VERDICTS_FILE).is_file()):
        return run.verdicts
    kept = {v["qid"]: v for v in run.verdicts}  # lengths back-filled in memory (backfill_styles) are kept
    full = load_run(run.path).verdicts
    for verdict in full:
        for side in ("style_a", "style_b"):
            if side not in verdict and side in kept.get(verdict["qid"], {}):
                verdict[side] = kept[verdict["qid"]][side]
    return full


def verdict_view(runs: Sequence[Run], *, reference: str, options: ViewerOptions,
                 data_dir: str | os.PathLike | None = None) -> dict:
    """The viewer's data: ``systems``, ``judges``, ``domains``, ``texts`` (distinct texts, each cut as the
    options say), ``cut`` (``{text index: full length}`` of the cut texts), ``rows`` and ``notes``.

    A row is ``[qid, domain, system_a, system_b, outcome, words_a, words_b, question, answer_a, answer_b,
    judgments, error]``: domain, systems and judges as indices into their lists; outcome 0 win, 1 tie, 2 loss
    (system_a's side), -1 failed; words -1 when not recorded; texts as indices into ``texts`` (-1: not
    available); judgments ``[[judge, a_position, outcome, reply], ...]`` (a_position 1: system_a's answer
    shown first); error: why a failed pair has no outcome (a text index, -1 when none)."""
    notes: list[str] = []
    answers: dict[str, dict[str, dict]] = {}
    for name, path in options.predictions.items():
        try:
            answers[name] = _prediction_rows(path)
        except (RagQaArenaError, OSError, ValueError) as error:
            notes.append(f"{name}'s answers not shown: {str(error).splitlines()[0][:300]}")
    lfrqa_rows: dict[str, tuple[str, str]] = {}
    if any(run.opponent == reference for run in runs):
        if options.reference_texts:
            try:
                lfrqa_rows = _reference_rows(data_dir)
            except Exception as error:  # noqa: BLE001 - the texts are optional: say why they are missing
                notes.append(f"{reference}'s answers and the questions not shown: LFRQA could not be loaded "
                             f"({str(error).splitlines()[0][:300]}); pass --data-dir DIR")
        else:
            notes.append(f"{reference}'s answers and the questions not loaded (--no-texts, or "
                         "ViewerOptions(reference_texts=False))")
    systems: list[str] = []
    judges: list[str] = []
    domains: list[str] = []

    def index(values: list[str], value) -> int:
        if value is None:
            return -1
        if value not in values:
            values.append(value)
        return values.index(value)

    texts = _Texts()
    rows = []
    for run in runs:
        for name in (run.system, *([] if run.opponent == reference else [run.opponent])):
            if name not in answers and not any(n.startswith(f"{name}'s answers not shown") for n in notes):
                notes.append(f"{name}'s answers not shown: pass --predictions {name}=FILE (the answers it was "
                             "judged on)")
        missing = not_in_lfrqa = 0
        for verdict in _full(run):
            qid = verdict["qid"]
            a_row, b_row = answers.get(run.system, {}).get(qid), answers.get(run.opponent, {}).get(qid)
            ref = lfrqa_rows.get(qid)
            question = ref[0] if ref else next((r.get("question") for r in (a_row, b_row)
                                                if r and isinstance(r.get("question"), str)), None)
            answer_a = a_row.get("answer") if a_row else None
            answer_b = (b_row.get("answer") if b_row else None) if run.opponent != reference or not ref else ref[1]
            if (run.system in answers and a_row is None) or (run.opponent in answers and b_row is None):
                missing += 1
            not_in_lfrqa += bool(lfrqa_rows) and run.opponent == reference and ref is None
            style_a, style_b = verdict.get("style_a") or {}, verdict.get("style_b") or {}
            judgments = [[index(judges, j.get("judge")), j.get("a_position"),
                          _OUTCOME.get(j.get("outcome"), -1), texts.add(j.get("raw"))]
                         for j in verdict.get("judgments") or [] if isinstance(j, dict)]
            rows.append([qid, index(domains, verdict.get("domain")), index(systems, run.system),
                         index(systems, run.opponent), _OUTCOME.get(verdict.get("outcome"), -1),
                         _words(style_a), _words(style_b), texts.add(question), texts.add(answer_a),
                         texts.add(answer_b), judgments, texts.add(verdict.get("error"))])
        if not_in_lfrqa:
            notes.append(f"{run.system} vs {run.opponent}: {not_in_lfrqa:,} verdict(s) whose qid is not one of LFRQA's "
                         "test questions: LFRQA's answer is not shown")
        if missing:
            notes.append(f"{run.system} vs {run.opponent}: {missing:,} verdict(s) whose qid is not in a prediction "
                         "file given: their answer is not shown")
    cut_to = min(options.max_text_chars, _common_cut([len(t) for t in texts.items], options.max_total_chars))
    cut = {k: len(t) for k, t in enumerate(texts.items) if len(t) > cut_to}
    if cut:
        notes.append(f"{len(cut):,} text(s) longer than {cut_to:,} characters are cut to that length (each says "
                     f"its full length): the page holds at most {options.max_total_chars:,} characters of text")
    return {"systems": systems, "judges": judges, "domains": domains, "reference": reference,
            "texts": [t[:cut_to] if k in cut else t for k, t in enumerate(texts.items)],
            "cut": {str(k): n for k, n in cut.items()}, "rows": rows, "notes": notes}


def _words(style: Mapping) -> int:
    words = style.get("words")
    return words if isinstance(words, int) and not isinstance(words, bool) else -1


def viewer_json(view: dict) -> str:
    """``view`` as strict JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&``
    written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (no ``</script>`` or ``<!--`` can appear)."""
    text = json.dumps(view, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))

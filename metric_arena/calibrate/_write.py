"""The judge card on disk (``judge_card.json``, ``judge_card.md``) and on the Hub (card, README, matched
verdicts as Parquet), through the one upload of :mod:`builders` (secret scan, one-line errors)."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from builders import HUB_UPLOAD_KEYWORDS, HubUpload, check_repo_id, check_secrets, resolve_token, upload_files
from lfrqa.checks import grouped_keywords
from lfrqa.errors import RagQaArenaError
from lfrqa.kernel import atomic_write, dumps_json, loads_json, make_folder
from metric_arena.stats import OUTCOMES

__all__ = ["CARD_JSON", "CARD_MD", "card_markdown", "card_push_files", "card_summary", "push_card", "write_card"]

CARD_JSON = "judge_card.json"
CARD_MD = "judge_card.md"
MATCHED_JSONL = "matched_verdicts.jsonl"


def write_card(out: str | os.PathLike, card: dict, rows: list[dict]) -> Path:
    """Write ``judge_card.json`` (strict JSON), ``judge_card.md`` and ``matched_verdicts.jsonl`` to ``out``."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise RagQaArenaError(f"--out {folder} is a file: give a folder for the judge card (created if missing)")
    make_folder(folder)
    atomic_write(folder / CARD_JSON, dumps_json(card))
    atomic_write(folder / CARD_MD, card_markdown(card))
    atomic_write(folder / MATCHED_JSONL, "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in rows))
    return folder


def _pct(value) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _num(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _md(text) -> str:
    """Markdown-safe text: names never become markup or break a table."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", str(text).replace("\n", " "))


def card_markdown(card: dict) -> str:
    """The card as a page people read: headline figures, the confusion table, per-system shifts, biases, cost."""
    ref, cand = card["judges"]["reference"], card["judges"]["candidate"]
    conf = card["settings"]["confidence"]
    low, high = card["kappa_ci"]
    lines = [
        "# Judge card",
        "",
        f"Reference judge: **{_md(', '.join(ref['specs']))}** (parse {_md(', '.join(ref['parse']))}; order "
        f"{_md(', '.join(ref['order']) or '?')}). Candidate judge: **{_md(', '.join(cand['specs']))}** (parse "
        f"{_md(', '.join(cand['parse']))}; order {_md(', '.join(cand['order']) or '?')}).",
        "",
        *(f"> **Note:** {_md(remark)}" + "\n" for remark in card.get("remarks") or []),
        f"- Pairs both judged: **{card['n_pairs']:,}** ({card['n_matched_failed']:,} matched pairs failed on a side; "
        f"{card['unmatched']['reference_only']:,} judged by the reference only, "
        f"{card['unmatched']['candidate_only']:,} by the candidate only)",
        f"- Same outcome: **{_pct(card['agreement'])}**",
        f"- Cohen's κ (win/tie/loss): **{_num(card['kappa'])}** [{_num(low)}, {_num(high)}] ({conf:.0%} bootstrap "
        "over pairs)",
        f"- κ on the {card['n_decisive']:,} pairs both called decisive (win/loss): {_num(card['kappa_decisive'])}",
        "",
        "## Confusion (rows: reference, columns: candidate)",
        "",
        "| reference \\ candidate | win | tie | loss |",
        "|---|---|---|---|",
        *(f"| {r} | " + " | ".join(f"{card['confusion'][r][c]:,}" for c in OUTCOMES) + " |"
          for r in OUTCOMES),
        "",
        "## Win rates per system",
        "",
        "| system | pairs | win % ref | win % cand | shift | win+tie % ref | win+tie % cand | shift |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in card["win_rate_shift"].items():
        lines.append(f"| {_md(name)} | {s['n']:,} | {_pct(s['reference_win_rate'])} | {_pct(s['candidate_win_rate'])} | "
                     f"{s['win_rate'] * 100:+.1f} pts | {_pct(s['reference_win_tie_rate'])} | "
                     f"{_pct(s['candidate_win_tie_rate'])} | {s['win_tie_rate'] * 100:+.1f} pts |")
    lines += _anchored_markdown(card)
    rank = card["rank_correlation"]
    lines += ["", f"Rank correlation of the systems' win rates ({rank['n_systems']} systems): Spearman "
              f"{_num(rank['spearman'])}, Kendall {_num(rank['kendall'])}" + (f" ({rank['note']})" if rank.get("note") else "")
              + ".", "", "## Each judge", "",
              "| | reference | candidate |", "|---|---|---|"]
    rows = [
        ("P(prefer longer answer)", lambda r: f"{_pct(card['p_prefer_longer'][r])} (n={card['n_prefer_longer'][r]:,})"),
        ("P(prefer answer shown first)", lambda r: f"{_pct(card['p_prefer_first'][r])} (n={card['n_prefer_first'][r]:,})"),
        ("failed verdicts", lambda r: f"{card['n_failed'][r]:,}"),
        ("price per 1,000 judgments", lambda r: "n/a" if card["cost"][r]["price_per_1000_usd"] is None
         else f"${card['cost'][r]['price_per_1000_usd']:.2f}"),
        ("time per 1,000 judgments", lambda r: "n/a" if card["cost"][r]["time_per_1000_s"] is None
         else f"{card['cost'][r]['time_per_1000_s']:.1f} s"),
    ]
    for label, cell in rows:
        lines.append(f"| {label} | {cell('reference')} | {cell('candidate')} |")
    lines += ["", "P(prefer longer): among decisive verdicts on answers of different lengths (whitespace words), the "
              "share won by the longer; P(prefer first): among decisive judgments, the share won by the answer shown "
              "first (0.5 = no lean).",
              "Price: " + "; ".join(f"{r}: {_md(card['cost'][r].get('price_note', ''))}" for r in ("reference", "candidate")) + ".",
              "Time: " + "; ".join(f"{r}: {_md(card['cost'][r]['time_note'])}" for r in ("reference", "candidate")) + ".",
              "", f"Made by rag-qa-arena {_md(card['package_version'])} on {_md(card['created_at'])}.", ""]
    return "\n".join(lines)


def _anchored_markdown(card: dict) -> list[str]:
    """The reading and the anchored rates (cards written before 0.3 have neither: nothing)."""
    if "reading" not in card:
        return []
    reading = card["reading"]
    lines = ["", f"**Reading: the candidate {_md(reading['reading'])}** ({_md('; '.join(reading['reasons']))}; "
             "thresholds in the README, *Anchored rates*).", "", "## Anchored rates (candidate on all its pairs, "
             "anchored on the reference's verdicts, PPI++)", "",
             "| system | anchors | win % anchored | interval | win % raw | win+tie % anchored | interval | win+tie % raw |",
             "|---|---|---|---|---|---|---|---|"]
    for name, a in (card.get("anchored") or {}).items():
        w, wt = a["win_rate"], a["win_tie_rate"]
        lines.append(f"| {_md(name)} | {a['n_anchors']:,} of {a['n_candidate']:,} | {_pct(w['estimate'])} | "
                     f"{_pct(w['ci'][0])} – {_pct(w['ci'][1])} | {_pct(w['raw'])} | {_pct(wt['estimate'])} | "
                     f"{_pct(wt['ci'][0])} – {_pct(wt['ci'][1])} | {_pct(wt['raw'])} |")
    lines += ["", "Anchored rates are valid when the pairs both judged are a random subset of the candidate's "
              "(`rag-qa-arena anchor` draws it); with every pair judged by both they equal the reference's rates."]
    return lines


def _matched_parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        **{name: pa.array([r[name] for r in rows], type=pa.string())
           for name in ("system", "opponent", "qid", "domain", "reference_outcome", "candidate_outcome")},
        "candidate_flipped": pa.array([r["candidate_flipped"] for r in rows], type=pa.bool_()),
        **{name: pa.array([json.dumps(r[name], ensure_ascii=False) for r in rows], type=pa.string())
           for name in ("reference_judgments", "candidate_judgments")},
    })
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def _hub_readme(card: dict, repo_id: str) -> str:
    ref, cand = ", ".join(card["judges"]["reference"]["specs"]), ", ".join(card["judges"]["candidate"]["specs"])
    yaml = ["---", f"pretty_name: {json.dumps(f'Judge card: {cand} against {ref}')}", "language:", "- en",
            "tags:", "- rag-qa-arena", "- llm-as-a-judge", "- judge-calibration", "configs:", "- config_name: default",
            "  data_files:", "  - split: test", "    path: data/matched_verdicts.parquet", "---", ""]
    load = ["", "## Load", "", "```python", "import datasets",
            f"matched = datasets.load_dataset({json.dumps(repo_id)}, split=\"test\")", "```",
            "", "One row per pair judged on both sides: `reference_outcome`, `candidate_outcome` (from `system`'s side), "
            "each side's judgments as JSON text. `judge_card.json` holds every figure above.", ""]
    return "\n".join(yaml) + card_markdown(card) + "\n".join(load)


def card_push_files(card_dir: str | os.PathLike, *, repo_id: str, extra_secrets: Iterable[str] = ()) -> dict[str, bytes]:
    """``{path_in_repo: content}`` of what :func:`push_card` uploads (no network), secret-scanned."""
    check_repo_id(repo_id)
    folder = Path(card_dir)
    if not (folder / CARD_JSON).is_file():
        raise FileNotFoundError(f"{folder} holds no {CARD_JSON}: run `rag-qa-arena calibrate --out {folder}` first")
    card = loads_json((folder / CARD_JSON).read_text(encoding="utf-8"))
    matched = (folder / MATCHED_JSONL).read_text(encoding="utf-8") if (folder / MATCHED_JSONL).is_file() else ""
    readme = _hub_readme(card, repo_id)
    sources = {CARD_JSON: (folder / CARD_JSON).read_text(encoding="utf-8"), MATCHED_JSONL: matched,
               "README.md (generated)": readme}
    check_secrets(sources, what=str(folder), extra=extra_secrets)
    rows = [loads_json(line) for line in matched.splitlines() if line.strip()]
    return {"README.md": readme.encode("utf-8"), CARD_JSON: sources[CARD_JSON].encode("utf-8"),
            "data/matched_verdicts.parquet": _matched_parquet(rows)}


@grouped_keywords("upload", HubUpload, HUB_UPLOAD_KEYWORDS)
def push_card(card_dir: str | os.PathLike, repo_id: str, *, upload: HubUpload | None = None, api=None) -> str:
    """Upload a judge card folder to the dataset repo ``repo_id`` (created if missing); returns the commit URL.
    ``upload``: privacy, token and commit message (:class:`builders.HubUpload`)."""
    upload = upload if upload is not None else HubUpload()
    private, token, token_from_env, commit_message = upload.private, upload.token, upload.token_from_env, upload.commit_message
    check_repo_id(repo_id)
    if api is None or token_from_env:
        token = resolve_token(token, from_env=token_from_env)
    files = card_push_files(card_dir, repo_id=repo_id, extra_secrets=[token] if token else [])
    return upload_files(repo_id, files, private=private, token=token, token_from_env=token_from_env, api=api,
                        commit_message=commit_message or "Upload a RAG-QA Arena judge card")


def card_summary(card: dict) -> str:
    """The card's headline figures as a few lines of text (what ``rag-qa-arena calibrate`` prints)."""
    def num(value, digits=3):
        return "n/a" if value is None else f"{value:.{digits}f}"

    def pct(value):
        return "n/a" if value is None else f"{value * 100:.1f}%"

    judges = card["judges"]
    low, high = card["kappa_ci"]
    lines = [
        f"candidate {', '.join(judges['candidate']['specs'])} against reference {', '.join(judges['reference']['specs'])}",
        f"  pairs both judged {card['n_pairs']:,} (unmatched: {card['unmatched']['reference_only']:,} reference only, "
        f"{card['unmatched']['candidate_only']:,} candidate only; {card['n_matched_failed']:,} failed on a side)",
        f"  agreement {pct(card['agreement'])}  kappa {num(card['kappa'])} [{num(low)}, {num(high)}]  "
        f"kappa on decisive pairs {num(card['kappa_decisive'])} (n={card['n_decisive']:,})",
    ]
    for name, s in card["win_rate_shift"].items():
        lines.append(f"  {name:<24} win {pct(s['reference_win_rate'])} -> {pct(s['candidate_win_rate'])} "
                     f"({s['win_rate'] * 100:+.1f} pts)  win+tie {pct(s['reference_win_tie_rate'])} -> "
                     f"{pct(s['candidate_win_tie_rate'])} ({s['win_tie_rate'] * 100:+.1f} pts)")
    rank = card["rank_correlation"]
    lines.append(f"  rank correlation: Spearman {num(rank['spearman'])}, Kendall {num(rank['kendall'])}"
                 + (f" ({rank['note']})" if rank.get("note") else ""))
    for role in ("reference", "candidate"):
        lines.append(f"  {role:<9} P(prefer longer) {pct(card['p_prefer_longer'][role])}  P(prefer first) "
                     f"{pct(card['p_prefer_first'][role])}  failed {card['n_failed'][role]:,}")
    if "reading" in card:
        lines.append(f"  reading: the candidate {card['reading']['reading']} ({'; '.join(card['reading']['reasons'])})")
        for name, a in (card.get("anchored") or {}).items():
            w = a["win_rate"]
            lines.append(f"  {name:<24} anchored win {pct(w['estimate'])} [{pct(w['ci'][0])}, {pct(w['ci'][1])}] "
                         f"(raw {pct(w['raw'])}; {a['n_anchors']:,} anchors of {a['n_candidate']:,})")
    lines += [f"  note: {remark}" for remark in card.get("remarks") or []]
    return "\n".join(lines)

"""The report reads run folders lean: one line at a time, without the judges' reply texts, keys and short
strings shared; everything it counts is the same as from the whole verdicts."""

from __future__ import annotations

import json

from metric_arena.report import load_run


def test_a_lean_run_holds_every_verdict_but_the_reply_texts(tmp_path):
    folder = tmp_path / "sys"
    folder.mkdir()
    rows = [{"qid": f"q{i}", "domain": "fiqa", "system_a": "sys", "system_b": "LFRQA", "outcome": "win", "failed": False,
             "flipped": None, "no_answer_a": False,
             "judgments": [{"judge": "openai:j", "a_position": 1, "rating": 1, "outcome": "win",
                            "raw": "<thinking>" + "x" * 500 + "</thinking><rating>1</rating>", "attempts": 1,
                            "cached": False}]} for i in range(5)]
    (folder / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"qid": "torn')
    whole, lean = load_run(folder), load_run(folder, lean=True)
    assert whole.warnings == lean.warnings and any("torn last line" in w for w in lean.warnings)
    assert all(v["judgments"][0]["raw"].endswith("</thinking><rating>1</rating>") for v in whole.verdicts)
    for full, kept in zip(whole.verdicts, lean.verdicts):
        assert "raw" not in kept["judgments"][0]
        full["judgments"][0].pop("raw")
        assert full == kept
    assert lean.verdicts[0]["domain"] is lean.verdicts[4]["domain"]  # one string object, shared

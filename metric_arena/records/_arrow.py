"""The Arrow schemas of the records (``pyarrow`` imported when called) and the run push's verdicts table."""

from collections.abc import Mapping, Sequence

from lfrqa.kernel import json_line

__all__ = ["injection_type", "judgment_type", "prediction_schema", "retrieved_schema", "style_type", "verdict_schema",
           "verdicts_table"]


def judgment_type():
    """The Arrow struct of a :class:`Judgment` (every field; absent ones are null)."""
    import pyarrow as pa

    return pa.struct([
        ("judge", pa.string()), ("a_position", pa.int64()), ("rating", pa.int64()), ("outcome", pa.string()),
        ("raw", pa.string()), ("attempts", pa.int64()), ("cached", pa.bool_()), ("error", pa.string()),
        ("oversized", pa.int64()), ("system_folded", pa.bool_()),
        ("imported", pa.struct([("file", pa.string()), ("model", pa.string())])),
    ])


def style_type():
    """The Arrow struct of an :class:`AnswerStyle`."""
    import pyarrow as pa

    from metric_arena.records import AnswerStyle  # defined beside the other records

    return pa.struct([(name, pa.int64()) for name in AnswerStyle.__annotations__])


def injection_type():
    """The Arrow struct of an :class:`InjectionSigns`."""
    import pyarrow as pa

    return pa.struct([("defused_tags", pa.int64()), ("addresses_judge", pa.list_(pa.string()))])


def verdict_schema():
    """The Arrow schema of a :class:`Verdict` (every field; absent ones are null)."""
    import pyarrow as pa

    return pa.schema([
        ("qid", pa.string()), ("domain", pa.string()), ("system_a", pa.string()), ("system_b", pa.string()),
        ("outcome", pa.string()), ("failed", pa.bool_()), ("flipped", pa.bool_()), ("no_answer_a", pa.bool_()),
        ("judgments", pa.list_(judgment_type())), ("error", pa.string()), ("neutralized", pa.bool_()),
        ("outcome_strict", pa.string()), ("failed_as_tie", pa.bool_()), ("no_answer_a_reference", pa.bool_()),
        ("style_a", style_type()), ("style_b", style_type()),
        ("injection_a", injection_type()), ("injection_b", injection_type()),
    ])


def prediction_schema():
    """The Arrow schema of a :class:`Prediction` (every field; absent ones are null)."""
    import pyarrow as pa

    return pa.schema([
        ("qid", pa.string()), ("domain", pa.string()), ("question", pa.string()), ("answer", pa.string()),
        ("raw", pa.string()), ("model", pa.string()), ("prompt", pa.string()), ("passages", pa.list_(pa.string())),
        ("finish_reason", pa.string()), ("failed", pa.bool_()), ("error", pa.string()), ("oversized", pa.int64()),
        ("neutralized", pa.bool_()),
        # citations as text: a passage number is its digits ("3"), as CitedSentence's reader takes it
        ("sentences", pa.list_(pa.struct([("text", pa.string()), ("citations", pa.list_(pa.string()))]))),
    ])


def retrieved_schema():
    """The Arrow schema of a :class:`Retrieved` row."""
    import pyarrow as pa

    passage = pa.struct([("pid", pa.string()), ("doc_id", pa.string()), ("text", pa.string()),
                         ("score", pa.float64()), ("rank", pa.int64())])
    return pa.schema([("qid", pa.string()), ("domain", pa.string()), ("question", pa.string()),
                      ("passages", pa.list_(passage))])


def verdicts_table(verdicts: Sequence[Mapping]):
    """Verdict rows as an Arrow table of :func:`verdict_schema` (judgments a list of structs); a row
    without ``failed`` gets it from its outcome, and fields beyond the record travel as extra columns
    of strict JSON text, so nothing is lost."""
    import pyarrow as pa

    schema = verdict_schema()
    judgment_fields = [field.name for field in judgment_type()]
    columns = {}
    for field in schema:
        values = [row.get(field.name) for row in verdicts]
        if field.name == "judgments":
            values = [[{k: j.get(k) for k in judgment_fields} for j in (v or [])] for v in values]
        elif field.name == "failed":
            values = [bool(row.get("failed", row.get("outcome") is None)) for row in verdicts]
        columns[field.name] = pa.array(values, type=field.type)
    for name in sorted({k for row in verdicts for k in row} - set(schema.names)):
        columns[name] = pa.array([None if name not in row else json_line(row[name]).rstrip("\n") for row in verdicts],
                                 type=pa.string())
    return pa.table(columns)

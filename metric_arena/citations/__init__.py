"""Citation scores: does an answer cite what supports it (ALCE's support and citation precision, through an
entailer), and what a person cited for the same question (LFRQA's human citations)?

=============================  ===================================================================
name                           what it is
=============================  ===================================================================
:data:`CITATIONS`              the :class:`~metric_arena.metrics.Metric` (name ``"citations"``)
:data:`CITATION_FIELDS`        its fields: reference_recall, reference_precision, gold_precision,
                               support, citation_recall, citation_precision, uncited, invalid
:func:`cite`                   score a prediction file into a run folder (:func:`acite`: async)
:class:`CiteConfig`            system name, entailment spec, passages shown, entailer options
:func:`cite_dry_run`           the LLM entailment path's requests and cost, nothing sent
:func:`parse_sentences`        an answer's sentences and their ``[k]`` markers (the parsing rule)
:func:`make_entailment`        the entailer a spec names: ``nli:PATH_OR_ID`` or ``llm:BACKEND:MODEL``
:func:`score_answer`           one answer's scores from its sentences, passages and LFRQA's citations
:func:`score_references`       the reference scores alone, synchronously (no entailer)
:func:`lfrqa_cited_answers`    LFRQA's own answers as a cited prediction file (the sanity check)
=============================  ===================================================================

>>> [(s.text, s.markers) for s in parse_sentences("Paris is in France [1][2]. It is large. [3]")]
[('Paris is in France.', (1, 2)), ('It is large.', (3,))]
"""

from lfrqa.exports import export_names
from metric_arena.citations._cost import cite_dry_run
from metric_arena.citations._entail import make_entailment
from metric_arena.citations._metric import CITATION_FIELDS, CITATIONS, CITATIONS_FILE, CitationMetric
from metric_arena.citations._parse import ParsedSentence, Passages, parse_sentences
from metric_arena.citations._reference import lfrqa_cited_answers
from metric_arena.citations._run import CiteConfig, acite, cite
from metric_arena.citations._score import score_answer, score_references

__all__ = [
    "CITATIONS",
    "CITATIONS_FILE",
    "CITATION_FIELDS",
    "CitationMetric",
    "CiteConfig",
    "ParsedSentence",
    "Passages",
    "acite",
    "cite",
    "cite_dry_run",
    "lfrqa_cited_answers",
    "make_entailment",
    "parse_sentences",
    "score_answer",
    "score_references",
]

export_names(globals())

"""``ArenaCallback``: the RAG-QA Arena win rates of the model being trained, in the trainer's logs.

Every ``every_n_steps`` optimizer steps (and at the end of training) the callback answers a fixed,
seeded, domain-stratified LFRQA sample (:func:`~metric_arena.train.arena_sample`) with the model
being trained, using the paper's generation prompt (``v1`` or ``v2``) and its greedy decoding; it
judges those answers against LFRQA's with the paper's judge and logs, under ``<prefix>/``:
``win_rate``, ``win_tie_rate`` and their 95% bootstrap intervals (``*_ci_low``/``*_ci_high``),
``tie_rate``, ``loss_rate``, ``n``, ``n_failed``, ``n_sent``, ``n_cached`` and per domain
``<prefix>/<domain>/win_rate``/``win_tie_rate``. The figures go into ``state.log_history`` and, when
the callback is given the trainer, through the trainer's callbacks (TensorBoard, W&B...) as every
``Trainer.log`` does. An answer that has not changed since the last evaluation is judged from the
cache: it costs no request.

Generation runs on the model's device in eval mode (set back to train mode afterwards), on the
main process only (``state.is_world_process_zero``); with sharded weights (FSDP, ZeRO-3) use a
separate evaluation job instead.

The callback never takes training down once it has started: an evaluation that cannot run (the judge
unreachable or refusing the key, the judge dying mid-evaluation past the deadline, a generation error)
logs a warning on the ``metric_arena.train`` logger, is kept in ``failures`` and training goes on. What
would make every evaluation fail, a missing tokenizer, is said when the callback is attached: at
construction when given the trainer, else when the Trainer starts (``on_init_end``/``on_train_begin``).
The judge's requests of one evaluation are bounded by ``run.deadline`` (:data:`EVALUATION_DEADLINE`,
600 s, when the RunConfig sets none).
"""

from __future__ import annotations

import logging

from transformers import TrainerCallback

from lfrqa.checks import check_int, grouped_keywords
from lfrqa.errors import RagQaArenaError
from metric_arena.generate import GenerationConfig, RunOutput, generate_answers
from metric_arena.judge import DEFAULT_JUDGE, JudgeSpec
from metric_arena.llm import RunConfig, model_backend
from metric_arena.train._judge import ArenaJudge
from metric_arena.train._sample import ArenaQuestions, ArenaSchedule, arena_sample

__all__ = ["EVALUATION_DEADLINE", "ArenaCallback"]

logger = logging.getLogger("metric_arena.train")
#: Seconds the judge's requests of one evaluation may take when the RunConfig sets no ``deadline``.
EVALUATION_DEADLINE = 600.0
_NO_TOKENIZER = ("ArenaCallback needs the model's tokenizer to generate answers, and the Trainer has none: give "
                 "the Trainer processing_class=tokenizer")

_RATES = ("win_rate", "tie_rate", "loss_rate", "win_tie_rate")


def _metrics(result: dict, prefix: str) -> dict[str, float]:
    """The numbers of a judge result, flat, as a log entry (intervals split in low/high; None left out)."""
    def flat(summary: dict, head: str) -> dict:
        out = {f"{head}/{key}": summary.get(key) for key in _RATES}
        for key in ("win_rate_ci", "win_tie_rate_ci"):
            interval = summary.get(key) or [None, None]
            out[f"{head}/{key}_low"], out[f"{head}/{key}_high"] = interval[0], interval[1]
        return out

    metrics = flat(result, prefix)
    for key in ("n", "n_failed", "n_sent", "n_cached"):
        metrics[f"{prefix}/{key}"] = result.get(key)
    for domain, summary in sorted((result.get("per_domain") or {}).items()):
        metrics.update({k: v for k, v in flat(summary, f"{prefix}/{domain}").items()
                        if k.endswith(("/win_rate", "/win_tie_rate"))})
    return {key: value for key, value in metrics.items() if isinstance(value, (int, float)) and value == value}


_QUESTION_KEYWORDS = {"n_questions": "n", "domains": "domains", "seed": "seed", "retrieved": "retrieved",
                      "corpus_dir": "corpus_dir", "data_dir": "data_dir"}


class ArenaCallback(TrainerCallback):
    """A ``transformers.TrainerCallback`` that logs RAG-QA Arena win and win+tie rates while training.

    >>> trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)  # doctest: +SKIP
    >>> trainer.add_callback(ArenaCallback(trainer=trainer, judge="openai:gpt-4o-mini",
    ...                                    schedule=ArenaSchedule(every_n_steps=200),
    ...                                    questions=ArenaQuestions(n=100, retrieved="fiqa.bm25.jsonl")))  # doctest: +SKIP

    ``judge``: a :class:`~metric_arena.JudgeConfig` (or a spec / list of specs); ``run``: a
    :class:`~metric_arena.RunConfig` for the judge's requests (the cache is used as it says: an
    unchanged answer is judged from it). ``trainer``: lets the figures reach the trainer's other
    callbacks (TensorBoard, W&B); without it they are only appended to ``state.log_history``.
    ``questions``: which questions (:class:`ArenaQuestions`: how many, domains, seed, retrieved passages or
    the gold ones, LFRQA's files); ``schedule``: when (:class:`ArenaSchedule`: every N steps, at the end).
    Generation: ``generation`` (a :class:`~metric_arena.generate.GenerationConfig`: prompt, passages,
    ``max_tokens``) on ``batch_size`` questions at a time; figures logged under ``prefix/``. ``results``
    keeps each evaluation's step and judge summary (verdicts included). The loose keywords of earlier
    releases (``n_questions=``, ``domains=``, ``seed=``, ``retrieved=``, ``corpus_dir=``, ``data_dir=``;
    ``every_n_steps=``, ``at_end=``) work for one release, with a ``DeprecationWarning``.
    """

    @grouped_keywords("questions", ArenaQuestions, _QUESTION_KEYWORDS)
    @grouped_keywords("schedule", ArenaSchedule, ["every_n_steps", "at_end"])
    def __init__(
        self,
        *,
        judge: JudgeSpec = DEFAULT_JUDGE,
        run: RunConfig | None = None,
        trainer=None,
        questions: ArenaQuestions | None = None,
        schedule: ArenaSchedule | None = None,
        generation: GenerationConfig | None = None,
        batch_size: int = 8,
        prefix: str = "arena",
    ) -> None:
        questions = questions if questions is not None else ArenaQuestions()
        schedule = schedule if schedule is not None else ArenaSchedule()
        if not isinstance(questions, ArenaQuestions) or not isinstance(schedule, ArenaSchedule):
            raise RagQaArenaError(f"questions={questions!r}, schedule={schedule!r}: give a "
                                  "metric_arena.train.ArenaQuestions and a metric_arena.train.ArenaSchedule")
        every_n_steps, at_end, data_dir = schedule.every_n_steps, schedule.at_end, questions.data_dir
        check_int("every_n_steps", every_n_steps, minimum=1)
        check_int("batch_size", batch_size, minimum=1)
        self.generation = generation if generation is not None else GenerationConfig()
        if not isinstance(self.generation, GenerationConfig):
            raise RagQaArenaError(f"generation={generation!r}: give a metric_arena.generate.GenerationConfig")
        self.judge = ArenaJudge(judge=judge, run=run, data_dir=data_dir, deadline=EVALUATION_DEADLINE)
        if trainer is not None and getattr(trainer, "processing_class", None) is None:
            raise RagQaArenaError(_NO_TOKENIZER)
        self.trainer = trainer
        self.every_n_steps, self.at_end, self.prefix = every_n_steps, at_end, prefix
        self.batch_size, self.data_dir = batch_size, data_dir
        self.sample_options = {"n": questions.n, "domains": questions.domains, "seed": questions.seed,
                               "retrieved": questions.retrieved, "n_passages": self.generation.n_passages,
                               "data_dir": data_dir, "corpus_dir": questions.corpus_dir}
        self._rows: list[dict] | None = None
        self._last_step: int | None = None
        self.results: list[dict] = []
        self.failures: list[dict] = []  # {"step", "error"} of each evaluation that could not run

    @property
    def rows(self) -> list[dict]:
        """The evaluation questions (drawn once, on first use)."""
        if self._rows is None:
            self._rows = arena_sample(**self.sample_options)
        return self._rows

    # -- the numbers -------------------------------------------------------------------------
    def evaluate(self, model, tokenizer, *, step: int = 0) -> dict:
        """Answer the questions with ``model`` (and its ``tokenizer``), judge the answers; the judge's
        result (rates, per domain, verdicts) with ``step``, ``n_generation_failed`` and ``answers``."""
        if tokenizer is None:
            raise RagQaArenaError(_NO_TOKENIZER)
        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
        rows = self.rows
        backend = model_backend(model, tokenizer, name=f"trained@{step}", batch_size=self.batch_size)
        generated = generate_answers(
            rows, backend, generation=self.generation, output=RunOutput(progress=False), data_dir=self.data_dir,
            run=RunConfig(use_cache=False, max_concurrency=self.batch_size),  # the weights change: never cached
        )
        records = generated["predictions"]
        failed = [record["failed"] for record in records]
        result = self.judge(
            [record["answer"] or "" for record in records], [row["answer"] for row in rows],
            [row["question"] for row in rows], ids=[row["qid"] for row in rows],
            domains=[row["domain"] for row in rows], generation_failed=failed, system=f"step-{step}",
        )
        result.update(step=step, n_generation_failed=sum(failed),
                      answers={row["qid"]: record["answer"] for row, record in zip(rows, records)})
        self.results.append(result)
        return result

    def _run(self, args, state, control, model, processing_class) -> None:
        if not state.is_world_process_zero or self._last_step == state.global_step:
            return
        self._last_step = state.global_step
        tokenizer = self._tokenizer(processing_class)
        try:
            result = self.evaluate(model, tokenizer, step=state.global_step)
        except Exception as error:  # noqa: BLE001 - an evaluation that cannot run never stops training
            self.failures.append({"step": state.global_step, "error": f"{type(error).__name__}: {error}"})
            logger.warning("ArenaCallback: the evaluation at step %d could not run (%s: %s); training goes on",
                           state.global_step, type(error).__name__, error)
            return
        logs = _metrics(result, self.prefix)
        if state.epoch is not None:
            logs["epoch"] = state.epoch
        state.log_history.append({**logs, "step": state.global_step})
        if self.trainer is not None:  # what Trainer.log does after recording: every callback gets the entry
            self.trainer.callback_handler.on_log(args, state, control, logs)

    def _tokenizer(self, processing_class):
        return processing_class if processing_class is not None else getattr(self.trainer, "processing_class", None)

    # -- TrainerCallback events --------------------------------------------------------------
    def on_init_end(self, args, state, control, processing_class=None, **kwargs):
        if self._tokenizer(processing_class) is None:  # given to Trainer(callbacks=[...]) without a tokenizer
            raise RagQaArenaError(_NO_TOKENIZER)

    def on_train_begin(self, args, state, control, processing_class=None, **kwargs):
        if self._tokenizer(processing_class) is None:  # added with add_callback to a Trainer without one
            raise RagQaArenaError(_NO_TOKENIZER)
        if state.is_world_process_zero:
            _ = self.rows  # a missing file or corpus is said before the first step, not after it

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if state.global_step % self.every_n_steps == 0:
            self._run(args, state, control, model, processing_class)

    def on_train_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if self.at_end:
            self._run(args, state, control, model, processing_class)

"""The package's surface: narrow entry points, option objects, deprecated forms, small contracts."""

from __future__ import annotations

import dataclasses
import warnings

import pytest


def test_leaderboard_to_dict_holds_every_field():
    from metric_arena.report import Leaderboard

    names = [f.name for f in dataclasses.fields(Leaderboard)]
    board = Leaderboard(**{n: n for n in names})
    assert board.to_dict() == {n: n for n in names}


def test_tournament_sample_warns_that_its_seed_is_unused():
    from metric_arena.judge import Tournament

    plan = Tournament(systems={}, lfrqa={}, order=["q3", "q1", "q2"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plan.sample(2) == ["q3", "q1"]
    with pytest.warns(DeprecationWarning, match="seed was never used"):
        assert plan.sample(2, seed=5) == ["q3", "q1"]


def test_judge_pairs_docstring_is_the_async_functions_own():
    from metric_arena.judge import ajudge_pairs, judge_pairs

    assert judge_pairs.__doc__ == ajudge_pairs.__doc__
    assert "Judge each prediction" in judge_pairs.__doc__

"""The per-gradient survey's table and figure (reports/survey.py): speed-ups on equal clocks only, each point and
sentence naming its clocks, and older records (Stan inside its NUTS, JAX in a loop) shown as mixed clocks."""

import pytest

from stanjax.reports import survey
from stanjax.runner.core import records

MODELS = ("sblrc-blr", "dogs-dogs")
# ms a gradient per side and clock: loop-vs-loop 2x, NUTS-vs-NUTS 1.25x, Stan's NUTS over JAX's loop 5x
MS = {("stan", "loop"): 0.02, ("stan", "nuts"): 0.05, ("jax", "loop"): 0.01, ("jax", "nuts"): 0.04}


def measured(clocks: bool) -> list[dict]:
    """Survey measurements of both models: each side on both clocks, or (older records) without a clock field,
    Stan's inside its NUTS and JAX's in a loop."""
    kept = MS if clocks else {("stan", "nuts"): MS["stan", "nuts"], ("jax", "loop"): MS["jax", "loop"]}
    return [
        records.measurement(
            "survey",
            {
                "measure": "gradient_cost",
                "side": side,
                "model_id": model_id,
                "round": 1,
                "ms_per_gradient": ms,
                **({"clock": clock} if clocks else {}),
            },
        )
        for model_id in MODELS
        for (side, clock), ms in kept.items()
    ]


def test_the_surveys_speed_ups_pair_equal_clocks_and_the_figure_names_each():
    table = survey.table(measured(clocks=True))
    assert sorted(table.clock) == ["loop", "loop", "nuts", "nuts"]
    by_clock = table.groupby("clock").speedup.unique()
    assert list(by_clock["loop"]) == [pytest.approx(2.0)] and list(by_clock["nuts"]) == [pytest.approx(1.25)]
    figure = survey.figure(measured(clocks=True))
    loop, nuts = figure["notes"]
    assert "both in a compiled loop: JAX-CPU's gradient 2.00× Stan's speed (geometric mean over 2" in loop
    assert "both inside their NUTS (sampler time ÷ leapfrog steps): JAX-CPU's gradient 1.25×" in nuts
    assert (
        "2 posteriors, both in a compiled loop" in figure["svg"]
        and "2 posteriors, both inside their NUTS" in figure["svg"]
    )
    assert "clock" in figure["title"] and "mixed" not in figure["svg"]


def test_older_survey_records_are_mixed_clocks_and_never_pooled_with_an_equal_pairing():
    """Records without a clock read as the clocks they were: Stan's NUTS over JAX's loop (5x here), labelled as
    mixed; beside equal-clock records of the same posteriors they are not shown at all."""
    old = survey.table(measured(clocks=False))
    assert list(old.clock) == ["mixed", "mixed"] and list(old.speedup) == [pytest.approx(5.0)] * 2
    (note,) = survey.figure(measured(clocks=False))["notes"]
    assert "mixed clocks, Stan inside its NUTS and JAX in a compiled loop" in note and "no equal-clock ratio" in note
    both = survey.table(measured(clocks=False) + measured(clocks=True))
    assert sorted(both.clock.unique()) == ["loop", "nuts"]
    assert list(both[both.clock == "loop"].speedup) == [pytest.approx(2.0)] * 2

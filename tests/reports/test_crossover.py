"""The first screen's crossover figure from made-up rows: a family of near-duplicates is one point (its members'
median, its bar the span of their intervals), its x Stan's ms per gradient over the ratio's own valid Stan runs,
the points in the order of that work, and the figure drawn with both markers named."""

import pandas as pd
import pytest

from stanjax.reports.crossover import crossover_svg, points
from stanjax.reports.stats import Ratio


def entry(value: float, run: int, blocks: int = 5, to_result: float | None = 1.5) -> dict:
    return {
        "state": "measured" if blocks >= 5 else "insufficient data",
        "ratio": Ratio(value, value * 0.9, value * 1.1, blocks),
        "denominator": "Stan-CPU",
        "entry": {"run_ids": [[f"numpyro{run}"], [f"stan{run}", f"invalid{run}"]]},
        "to_result": {"ratio": to_result},
    }


# Per ratio: a NumPyro run (not Stan's: never read), a valid Stan run and an invalid one (99 ms: never read).
CAMPAIGN = pd.DataFrame(
    {
        "run_id": [f"{kind}{run}" for run in (1, 2, 3) for kind in ("numpyro", "stan", "invalid")],
        "label": ["NumPyro-CPU", "Stan-CPU", "Stan-CPU"] * 3,
        "valid": [True, True, False] * 3,
        "ms_per_gradient": [0.01, 0.5, 99.0, 0.01, 0.7, 99.0, 0.01, 0.02, 99.0],
    }
)


def test_a_family_is_one_point_at_its_stan_runs_work_per_gradient():
    rows = [
        {"title": "NES 1972", "counted_as": "NES", "regime": "small regression", "entries": [entry(2.0, 1)]},
        {
            "title": "NES 1976",
            "counted_as": "NES",
            "regime": "small regression",
            "entries": [entry(4.0, 2, to_result=0.5)],
        },
        {"title": "Dogs", "regime": "recursion", "entries": [entry(0.5, 3, blocks=2, to_result=None)]},
        {"title": "Lotka", "regime": "ODE", "entries": []},  # no ratio: no point
    ]
    dogs, nes = points(rows, CAMPAIGN)  # along the work of a gradient: Dogs' 0.02 ms before NES's 0.6
    assert (dogs["name"], dogs["members"], dogs["verdict"], dogs["to_result"]) == ("Dogs", 1, False, None)
    assert dogs["ms_per_gradient"] == pytest.approx(0.02) and dogs["ratio"] == 0.5
    assert (nes["name"], nes["members"], nes["verdict"], nes["regime"]) == ("NES", 2, True, "small regression")
    assert nes["ms_per_gradient"] == pytest.approx(0.6)  # the median of 0.5 and 0.7
    assert (nes["ratio"], nes["to_result"]) == pytest.approx((3.0, 1.0))
    assert (nes["low"], nes["high"]) == pytest.approx((1.8, 4.4))  # the lowest interval's low, the highest's high
    drawn = crossover_svg([dogs, nes], "JAX-CPU", "Stan-CPU", "when")
    assert drawn.count("<title>when</title>") == 1 and "time to 1,000 ESS, compile included" in drawn
    assert "small regression" in drawn and "recursion" in drawn  # the regimes' colours named
    assert crossover_svg([], "JAX-CPU", "Stan-CPU", "when") is None

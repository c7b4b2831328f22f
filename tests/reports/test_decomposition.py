"""JAX ÷ Stan split with nutpie: the gradient's part (nutpie-JAX ÷ nutpie-Stan), the sampler's (NumPyro ÷
nutpie-JAX) and a Stan user's (nutpie-Stan ÷ Stan), each read from the pairings in the orientation it names."""

import pytest

from stanjax.reports.decomposition import rows, stan_user_line, text
from stanjax.reports.stats import Ratio


def pairing(numerator: str, denominator: str, value: float, model_id: str = "lotka", blocks: int = 5) -> dict:
    ratio = Ratio(value, value * 0.9, value * 1.1, blocks)
    return {
        "machine": "epyc-2core-54625c4b",
        "size": "default",
        "numerator": numerator,
        "denominator": denominator,
        "models": [{"model_id": model_id, "warm": ratio, "blocks": blocks}],
    }


def test_each_part_is_read_in_its_own_orientation_and_the_larger_part_named():
    """The pairings order their sides by the registry (NumPyro 2 < nutpie-JAX 3 < nutpie-Stan 4 < Stan 5), but a
    part read the other way round (Stan ÷ nutpie-Stan, recorded so) is turned: nutpie-Stan ÷ Stan = 1 / 0.8."""
    comparisons = [
        pairing("NumPyro-CPU", "Stan-CPU", 3.0),
        pairing("nutpie-JAX-CPU", "nutpie-Stan-CPU", 0.5),  # JAX's gradient slower through nutpie's callback
        pairing("NumPyro-CPU", "nutpie-JAX-CPU", 5.0),
        pairing("Stan-CPU", "nutpie-Stan-CPU", 0.8),
        pairing("NumPyro-CPU", "Stan-CPU", 9.0, model_id="no nutpie here"),
    ]
    (row,) = rows(comparisons)  # only where a nutpie engine has a ratio
    parts = row["parts"]
    assert (parts["whole"].value, parts["gradient"].value, parts["sampler"].value) == (3.0, 0.5, 5.0)
    assert parts["stan_user"].value == pytest.approx(1.25) and parts["stan_user"].low == pytest.approx(1 / 0.88)
    assert row["larger"] == "sampler" and row["product"] == pytest.approx(2.5)
    assert row["texts"]["gradient"].startswith("2.00× slower (")
    (line,) = stan_user_line([row])
    assert line["model_id"] == "lotka" and line["text"].startswith("1.25× (")


def test_a_part_not_measured_or_on_too_few_blocks_says_so():
    comparisons = [pairing("nutpie-JAX-CPU", "nutpie-Stan-CPU", 2.0, blocks=3)]
    (row,) = rows(comparisons)
    assert row["texts"]["gradient"] == "2.00× so far (3 blocks; 5 needed)"
    assert row["texts"]["sampler"] == text(None) == "not measured"
    assert row["larger"] is None and row["product"] is None and stan_user_line([row]) == []
    assert rows([pairing("NumPyro-CPU", "Stan-CPU", 3.0)]) == []

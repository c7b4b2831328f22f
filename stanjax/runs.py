"""What the run verbs give back: ``sample`` a :class:`Run` (a record and its draws), ``compare`` a
:class:`Comparison` (a ratio with its interval, or why there is none)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stanjax.reports.stats import Ratio
    from stanjax.runner.core.records import RunRecord


@dataclass
class Run:
    """One run: its record (settings, timings, metrics, gates, provenance) and its draws."""

    record: RunRecord
    draws: dict[str, Any] = field(repr=False)  # name -> (chain, draw, ...) array
    sample_stats: dict[str, Any] = field(repr=False)  # diverging, n_steps: (chain, draw)

    @property
    def valid(self) -> bool:
        """Whether it passed every gate (completed, finite, R-hat, ESS, divergences, reference)."""
        return self.record.valid

    @property
    def ess_per_second(self) -> float:
        """Min bulk ESS over the parameters ÷ the run's warmup and sampling wall seconds (compile excluded)."""
        return self.record.metrics.ess_per_s

    @property
    def ms_per_gradient(self) -> float:
        return self.record.metrics.ms_per_gradient

    def to_inference_data(self):
        """The draws as arviz's DataTree (``posterior`` and ``sample_stats`` groups)."""
        from arviz_base import from_dict

        return from_dict({"posterior": self.draws, "sample_stats": self.sample_stats})


@dataclass(frozen=True)
class Comparison:
    """A paired comparison: ``numerator`` ÷ ``denominator`` ESS/s, the median of the block ratios with its
    order-statistic interval (``ratio``: value, low, high, blocks), from the blocks where both runs were valid and
    measured on a quiet machine; ``insufficient`` under 5 such blocks (then it is no evidence either way), and then
    ``why``: the blocks paired of those planned and, per side, its runs, the valid and the loaded ones, the gates
    failed and the runs that did not finish."""

    model_id: str
    numerator: str
    denominator: str
    ratio: Ratio | None
    why: str | None
    records: list[RunRecord] = field(repr=False)

    @property
    def insufficient(self) -> bool:
        return self.why is not None

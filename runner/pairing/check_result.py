"""What ``stanjax check`` found, stage by stage: the object its stages fill (:mod:`stanjax.runner.pairing.check`,
:mod:`stanjax.runner.pairing.run_stage`) and the verb and the API read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stanjax.models import ModelSpec
from stanjax.reports.stats import Ratio
from stanjax.runner.pairing.check_verdicts import EXIT


@dataclass
class CheckResult:
    """What a check found, stage by stage (``stages``: name, ok, line, notes, seconds); ``verdict`` None where every
    stage run passed but the check stopped before the runs (``stop_after``); the short run's records, per-engine
    rows, per-parameter rows (largest |z| first), the two engines' agreement per repeat, the speed ratio (NumPyro /
    Stan ESS/s over paired repeats) and advice. ``stopped``: the Ctrl-C or SIGTERM that ended the runs early."""

    spec: ModelSpec
    size: str
    seed: int
    out: Path
    given: tuple[Path, Path] | None
    stages: list[dict] = field(default_factory=list)
    verdict: str | None = None
    advice: list[str] = field(default_factory=list)
    records: list = field(default_factory=list)
    jobs: list = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    parameters: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    speed: Ratio | None = None
    speed_advice: list[str] = field(default_factory=list)
    settings: str = ""
    stopped: KeyboardInterrupt | None = None

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict] if self.verdict else 0

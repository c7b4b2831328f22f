"""How long a run will take, from earlier records: what plans a campaign (``stanjax campaign gpu``) and what
``stanjax run --estimate`` says of one before it starts (or of what a resumed one has left)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from stanjax import models
from stanjax.runner import records
from stanjax.runner.config import Job
from stanjax.runner.records import RunRecord

GUESS_S = 180.0  # a run with no earlier record of anything like it
MEASUREMENT_OVERHEAD_S = 10.0
MAX_POWER = 3.0  # the steepest growth with N a run is scaled by (dense linear algebra); at least in proportion  # a measurement's process start and JAX import, beside its own wall time


class Estimator:
    """Seconds a run will take, from earlier ok records: the median worker wall time of the same setup (model,
    engine, device, precision, chain method, chains, data sizes), from ``machine``'s records where it has such
    (a slug: a CPU campaign's own machine), else from machines with a GPU where there are such records; else of another engine on the same device, sizes and chains; else the same setup at the nearest
    other N, scaled by the power of N its runs at the two nearest sizes show (between 1 and MAX_POWER; in proportion
    from one size); else any run of the model at these sizes; else a guess. Each estimate
    says which."""

    def __init__(self, history: list[RunRecord], measurements: list[dict] = (), machine: str | None = None):
        self.machine = machine
        self.walls: dict[tuple, list[tuple[bool, float, dict, str, str]]] = defaultdict(list)
        for run in history:
            if run.status == "ok" and run.wall_s and run.sizes is not None:
                key = (run.model_id, run.device, run.precision, run.config.chains)
                self.walls[key].append(
                    (
                        bool(run.provenance.machine.gpu),
                        run.wall_s,
                        run.sizes,
                        run.machine,
                        f"{run.engine}/{run.chain_method}",
                    )
                )
        self.rwmh = defaultdict(list)
        for m in measurements:
            if m.get("measure") == "rwmh":
                self.rwmh[(m["backend"], records.measurement_device(m), m["chains"])].append(m["wall_s"])

    def __call__(self, job: Job) -> tuple[float, str]:
        spec = models.get(job.model_id)
        sizes = spec.size_kwargs(job.config.size, job.config.resize)
        setup = f"{job.engine}/{job.placement.chain_method}"
        found = self.walls.get((job.model_id, job.device, job.placement.precision, job.config.chains), [])
        if any(f[3] == self.machine for f in found):
            found = [f for f in found if f[3] == self.machine]
        elif any(f[0] for f in found):
            found = [f for f in found if f[0]]
        same = [f for f in found if f[4] == setup and f[2] == sizes]
        if same:
            return statistics.median(f[1] for f in same), f"median of {len(same)} run(s) on {same[0][3]}"
        other_engine = [f for f in found if f[2] == sizes]
        if other_engine:
            return (
                statistics.median(f[1] for f in other_engine),
                f"median of {len(other_engine)} run(s) of {other_engine[0][4]} on {other_engine[0][3]}",
            )
        rest = {name: value for name, value in sizes.items() if name != spec.n_key}
        by_n = [
            (f[2][spec.n_key], f)
            for f in found
            if f[4] == setup
            and f[2].get(spec.n_key)
            and {name: value for name, value in f[2].items() if name != spec.n_key} == rest
        ]
        if by_n:
            target = sizes[spec.n_key]
            medians = {m: statistics.median(f[1] for k, f in by_n if k == m) for m, _ in by_n}
            n, second = (sorted(medians, key=lambda m: abs(math.log(m / target))) + [None])[:2]
            power = 1.0
            if second is not None:  # the cost's power of N between the two nearest sizes run (a GP's Cholesky: 3)
                power = min(MAX_POWER, max(1.0, math.log(medians[n] / medians[second]) / math.log(n / second)))
            count, machine = sum(1 for k, _ in by_n if k == n), next(f[3] for k, f in by_n if k == n)
            return (
                medians[n] * (target / n) ** power,
                f"{count} run(s) at {spec.n_key}={n} on {machine}, scaled to {target} as N^{power:.2g}"
                + (f" (the power from the runs at {spec.n_key}={second})" if second is not None else ""),
            )
        elsewhere = [
            f for (model_id, *_), runs in self.walls.items() if model_id == job.model_id for f in runs if f[2] == sizes
        ]
        if elsewhere:
            return (
                statistics.median(f[1] for f in elsewhere),
                f"median of {len(elsewhere)} run(s) of this model and size on other devices or settings",
            )
        return GUESS_S, "no earlier run: a guess"

    def measurement(self, backend: str, device: str, chains: int) -> tuple[float, str]:
        walls = self.rwmh.get((backend, device, chains))
        if walls:
            return statistics.median(walls) + MEASUREMENT_OVERHEAD_S, f"median of {len(walls)} measurement(s)"
        return GUESS_S / 6, "no earlier measurement: a guess"

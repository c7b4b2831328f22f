"""How long a run will take, from earlier records: what plans a campaign (``stanjax campaign gpu``) and what
``stanjax run --estimate`` says of one before it starts (or of what a resumed one has left).

Where the gradient cost of a run's setup was measured on this machine (``measure: gradient_cost``,
:mod:`stanjax.runner.measure.gradient_cost`), the estimate is composed from it: the leapfrog steps an iteration takes on
the model (any earlier run of it, any machine: a property of the posterior and the sampler) × the iterations ×
that cost, plus the compilation earlier runs of the engine on the device took and a process's start. Walls
scaled from other machines or sizes were 35× too long for NumPyro on a GPU at 581,012 rows."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from stanjax import models
from stanjax.runner.core import records
from stanjax.runner.core.config import Job
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure.gradient_cost import setup_key, setup_of

GUESS_S = 180.0  # a run with no earlier record of anything like it
MEASUREMENT_OVERHEAD_S = 10.0  # a measurement's process start and JAX import, beside its own wall time
MAX_POWER = 3.0  # the steepest growth with N a run is scaled by (dense linear algebra); at least in proportion
START_S = 8.0  # a worker's start, imports and data, beside the sampler and its compilation
STEPS_GUESS = 31.0  # leapfrog steps an iteration where no run of the model was ever recorded (a depth-5 tree)


class Seen(NamedTuple):
    """An earlier ok run, as much of it as an estimate uses."""

    gpu: bool
    wall_s: float
    sizes: dict
    machine: str
    setup: str  # engine/chain method
    iterations: int  # warmup + draws per chain


class Estimator:
    """Seconds a run will take, from earlier ok records: the median worker wall time of the same setup (model,
    engine, device, precision, chain method, chains, data sizes), from ``machine``'s records where it has such
    (a slug: a CPU campaign's own machine), else from machines with a GPU where there are such records; else of
    another engine on the same device, sizes and chains; else the same setup at the nearest other N, scaled by the
    power of N its runs at the two nearest sizes show (between 1 and MAX_POWER; in proportion from one size); else
    any run of the model at these sizes; else a guess. Every earlier run's time is first scaled to the job's
    iterations a chain (warmup + draws), in proportion: a model that now takes 2,000 draws is not estimated from
    its runs of 1,000 as they were. Each estimate says which."""

    def __init__(self, history: list[RunRecord], measurements: Sequence[dict] = (), machine: str | None = None):
        self.machine = machine
        self.walls: dict[tuple, list[Seen]] = defaultdict(list)
        steps, compiles = defaultdict(list), defaultdict(list)
        for run in history:
            if run.status == "ok" and run.metrics and run.metrics.gradients_warmup is not None:
                iterations = run.config.chains * (run.config.warmup + run.config.draws)
                steps[run.model_id].append((run.metrics.gradients_sampling + run.metrics.gradients_warmup) / iterations)
            if run.status == "ok" and run.timings:
                compiles[(run.engine, run.device)].append(run.timings.compile_s)
        self.steps = {model_id: statistics.median(found) for model_id, found in steps.items()}
        self.compile_s = {key: statistics.median(found) for key, found in compiles.items()}
        # The newest measurement of each setup's gradient cost (made on the machine that plans, by make_plan's
        # caller: a campaign's calibration step writes them before planning).
        self.costs = {
            setup_key(m): m
            for m in sorted(measurements, key=lambda m: m.get("created", ""))
            if m.get("measure") == "gradient_cost"
        }
        for run in history:
            if run.status == "ok" and run.wall_s and run.sizes is not None:
                key = (run.model_id, run.device, run.precision, run.config.chains)
                self.walls[key].append(
                    Seen(
                        bool(run.provenance.machine.gpu),
                        run.wall_s,
                        run.sizes,
                        run.provenance.machine.slug,
                        f"{run.engine}/{run.chain_method}",
                        run.config.warmup + run.config.draws,
                    )
                )
        self.rwmh = defaultdict(list)
        for m in measurements:
            if m.get("measure") == "rwmh":
                self.rwmh[(m["backend"], records.measurement_device(m), m["chains"])].append(m["wall_s"])

    def __call__(self, job: Job) -> tuple[float, str]:
        seconds, basis, seen = self._estimate(job)
        iterations = job.config.warmup + job.config.draws
        if any(f.iterations != iterations for f in seen):
            basis += f", scaled to {iterations:,} iterations a chain"
        return seconds, basis

    def composed(self, job: Job) -> tuple[float, str] | None:
        """The estimate from the gradient cost measured for the job's setup; None where none was."""
        cost = self.costs.get(setup_key(setup_of(job)))
        if cost is None:
            return None
        steps = self.steps.get(job.model_id)
        iterations = job.config.warmup + job.config.draws
        # Chains in turn: all of them one after another; in parallel (Stan's processes, NumPyro's devices) as many
        # at once as the job's cores hold, at the threads each uses; a vectorised batch is one call, measured so.
        serial = {"sequential": job.config.chains, "vectorized": 1}.get(
            job.placement.chain_method,
            -(-job.config.chains * job.placement.threads_per_chain // job.cores) if job.cores else 1,
        )
        sampler_s = iterations * (steps or STEPS_GUESS) * serial * cost["ms_per_gradient"] / 1e3
        compile_s = self.compile_s.get((job.engine, job.device), cost.get("compile_s", 0.0))
        basis = (
            f"composed: {cost['ms_per_gradient']:.3g} ms a gradient measured here × "
            + (
                f"{steps:.3g} leapfrog steps an iteration (earlier runs of the model)"
                if steps
                else f"{STEPS_GUESS:g} leapfrog steps an iteration (a guess: no run of the model)"
            )
            + f" × {iterations:,} iterations{f' × {serial} chains in turn' if serial > 1 else ''}, + {compile_s:.0f} s compile + {START_S:g} s start"
        )
        return START_S + compile_s + sampler_s, basis

    def _estimate(self, job: Job) -> tuple[float, str, list[Seen]]:
        composed = self.composed(job)
        if composed is not None:
            return (*composed, [])
        spec = models.get(job.model_id)
        sizes = spec.size_kwargs(job.config.size, job.config.resize)
        iterations = job.config.warmup + job.config.draws

        def wall(f: Seen) -> float:
            return f.wall_s * iterations / f.iterations

        setup = f"{job.engine}/{job.placement.chain_method}"
        found = self.walls.get((job.model_id, job.device, job.placement.precision, job.config.chains), [])
        if any(f.machine == self.machine for f in found):
            found = [f for f in found if f.machine == self.machine]
        elif any(f.gpu for f in found):
            found = [f for f in found if f.gpu]
        same = [f for f in found if f.setup == setup and f.sizes == sizes]
        if same:
            return statistics.median(map(wall, same)), f"median of {len(same)} run(s) on {same[0].machine}", same
        other_engine = [f for f in found if f.sizes == sizes]
        if other_engine:
            return (
                statistics.median(map(wall, other_engine)),
                f"median of {len(other_engine)} run(s) of {other_engine[0].setup} on {other_engine[0].machine}",
                other_engine,
            )
        rest = {name: value for name, value in sizes.items() if name != spec.n_key}
        by_n = [
            (f.sizes[spec.n_key], f)
            for f in found
            if f.setup == setup
            and f.sizes.get(spec.n_key)
            and {name: value for name, value in f.sizes.items() if name != spec.n_key} == rest
        ]
        if by_n:
            assert spec.n_key is not None, "runs by N are found only for a model with an N"
            target = sizes[spec.n_key]
            medians = {m: statistics.median(wall(f) for k, f in by_n if k == m) for m, _ in by_n}
            n, second = (sorted(medians, key=lambda m: abs(math.log(m / target))) + [None])[:2]
            power = 1.0
            if second is not None:  # the cost's power of N between the two nearest sizes run (a GP's Cholesky: 3)
                power = min(MAX_POWER, max(1.0, math.log(medians[n] / medians[second]) / math.log(n / second)))
            count, machine = sum(1 for k, _ in by_n if k == n), next(f.machine for k, f in by_n if k == n)
            return (
                medians[n] * (target / n) ** power,
                f"{count} run(s) at {spec.n_key}={n} on {machine}, scaled to {target} as N^{power:.2g}"
                + (f" (the power from the runs at {spec.n_key}={second})" if second is not None else ""),
                [f for _, f in by_n],
            )
        elsewhere = [
            f
            for (model_id, *_), runs in self.walls.items()
            if model_id == job.model_id
            for f in runs
            if f.sizes == sizes
        ]
        if elsewhere:
            return (
                statistics.median(map(wall, elsewhere)),
                f"median of {len(elsewhere)} run(s) of this model and size on other devices or settings",
                elsewhere,
            )
        return GUESS_S, "no earlier run: a guess", []

    def measurement(self, backend: str, device: str, chains: int) -> tuple[float, str]:
        walls = self.rwmh.get((backend, device, chains))
        if walls:
            return statistics.median(walls) + MEASUREMENT_OVERHEAD_S, f"median of {len(walls)} measurement(s)"
        return GUESS_S / 6, "no earlier measurement: a guess"


def minutes(seconds: float) -> str:
    """An estimate's duration as a reader takes it in: minutes, or hours and minutes."""
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds // 3600:.0f} h {seconds % 3600 / 60:.0f} min"

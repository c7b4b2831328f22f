"""The GPU campaign: the whole GPU-vs-CPU comparison planned to fit a borrowed GPU's time, then run one step (one
command of at most ``step_s``) at a time, each step going on where the last stopped.

A plan is a list of units in priority order; a unit is one model at one size (or one grid point of a study), every
engine and repeat of it, so its pairs stay whole. Phases (:data:`PHASES`), first to last, where the claims live
first:

- claims: the claims' sizes: covtype at 581,012 rows (Tran & Hoffman) and Bradley–Terry at 200,000 matches
  (Ingram's 11× was at 160,420), their large presets: NumPyro and BlackJAX NUTS on the GPU, Stan on the CPU lane;
- data: covtype at 100k and 1M rows, Bradley–Terry at 10k, 50k, 160,420 and 1M matches (the crossover);
- chains: 4 ... 16,384 chains: vectorised NUTS and ChEES (nested R-hat from 64 chains on) against Stan with a
  chain on every core of the CPU lane, random-walk Metropolis, and rlouf's 1e9 random-walk draws in one run (JAX
  on the GPU and on the CPU lane's cores);
- zoo: the zoo at default: the quick models on every JAX engine on the GPU, the others on NumPyro there; Stan and
  NumPyro on the CPU;
- float32: float32 on the GPU, its own labelled pairing: the quick models, and covtype at 581,012 rows (where
  float32 NUTS has been seen to fail: step sizes collapsing over sums of ~1e5 terms);
- blackjax: BlackJAX NUTS and ChEES on the GPU for the other models.

The GPU runs float64 (Stan's precision) except in the float32 phase. Stan gets the CPU lane's cores: its chains ×
threads a chain (the reduce_sum program where the model has one) fill them. Two lanes run at once on disjoint cores: the GPU
lane (JAX on the GPU) on the first ``gpu_cores`` cores, the CPU lane (Stan and NumPyro on the CPU, one run at a
time, alternating) on the rest; each record states its cores.
Each run's time is estimated from earlier records of the same setup (:class:`Estimator`); a lane never starts a
run its step has no time left for, and a run longer than a step is left out of the plan, with the reason.
This module makes the plan; :mod:`stanjax.runner.campaigns.gpu_steps` runs it, step by step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from stanjax import models
from stanjax.runner.campaigns.studies import ITERATIONS, RLOUF_CHAINS, STUDIES
from stanjax.runner.core.config import Job, RunConfig, campaign_entropy
from stanjax.runner.core.engine_registry import CPU_PAIR, GPU_SAMPLERS, entry
from stanjax.runner.measure.estimates import Estimator
from stanjax.runner.measure.plan import block_order, with_threads
from stanjax.runner.measure.suites import QUICK_MODELS

BLACKJAX_ENGINES = ("blackjax_nuts", "blackjax_chees")
COVTYPE = "covtype_synth-logistic_regression"
BRADLEY_TERRY = "tennis_synth-bradley_terry_hierarchical"
CLAIM_MODELS = (COVTYPE, BRADLEY_TERRY)  # at their large presets: 581,012 rows; 200,000 matches
# The data-size grid around the claims' sizes: NumPyro-CPU runs only where it fits a step (the smallest N).
DATA_SIZES = {COVTYPE: (100_000, 1_000_000), BRADLEY_TERRY: (10_000, 50_000, 160_420, 1_000_000)}
# Paired blocks of the headline units (a: the claims' sizes, d: the zoo at default): 5, the fewest whose
# order-statistic interval reaches 90 % (reports.stats.MIN_BLOCKS), as the quick and full suites run. The extras
# (e: float32, f: BlackJAX) run 3, labelled "insufficient data" in the report; a study's grid points run once, as
# `stanjax study` runs them.
HEADLINE_BLOCKS, EXTRA_BLOCKS = 5, 3
CHAINS, WARMUP, DRAWS = 4, 1000, 1000

# The phases by name, in priority order (the claims' regimes first): ``--phases`` picks some.
PHASES = {
    "claims": "the claims' sizes, float64: covtype at 581,012 rows and Bradley–Terry at 200,000 matches, NumPyro and "
    "BlackJAX NUTS on the GPU, Stan with the CPU lane's cores",
    "data": "data size, float64: covtype at 100k and 1M rows, Bradley–Terry at 10k, 50k, 160,420 and 1M matches",
    "chains": "chains 4 … 16,384: NUTS and ChEES vectorised against Stan with a chain a core, random-walk Metropolis, "
    "rlouf's 1e9 draws",
    "zoo": "the zoo at default, float64: every JAX engine on the GPU for the quick models, NumPyro for the others; "
    "Stan and NumPyro on the CPU",
    "float32": "float32 on the GPU, its own pairing: the quick models, and covtype at 581,012 rows",
    "blackjax": "BlackJAX NUTS and ChEES on the GPU (float64) for the other models",
}


@dataclass(frozen=True)
class Item:
    """One thing a lane runs: a sampler run (``job``) or a random-walk Metropolis measurement (``rwmh``: chains
    and backend, the chains study's), with its estimated seconds and where the estimate came from."""

    lane: str  # "gpu" or "cpu"
    study: str
    estimate_s: float
    basis: str
    job: Job | None = None
    rwmh: tuple[int, str] | None = None

    def label(self) -> str:
        if self.job:
            return self.job.label()
        assert self.rwmh is not None, "an item is a sampler run or a random-walk measurement"
        chains, backend = self.rwmh
        return f"rwmh-{backend}-{self.rwmh_device()} · {chains:,} chains"

    def rwmh_device(self) -> str:
        assert self.rwmh is not None, "only a random-walk measurement has an rwmh device"
        return rwmh_device(self.lane, self.rwmh[1])

    def as_dict(self) -> dict:
        return {
            "lane": self.lane,
            "study": self.study,
            "estimate_s": self.estimate_s,
            "basis": self.basis,
            "job": self.job.as_dict() if self.job else None,
            "rwmh": list(self.rwmh) if self.rwmh else None,
        }

    @classmethod
    def from_dict(cls, d: dict) -> Item:
        return cls(
            d["lane"],
            d["study"],
            d["estimate_s"],
            d["basis"],
            Job.from_dict(d["job"]) if d["job"] else None,
            tuple(d["rwmh"]) if d["rwmh"] else None,
        )


@dataclass
class Unit:
    """A model at one size (or a study's grid point): its items in both lanes, run in order."""

    phase: str
    label: str
    items: list[Item]

    def lane_s(self, lane: str) -> float:
        return sum(item.estimate_s for item in self.items if item.lane == lane)


@dataclass
class Plan:
    """What a campaign runs (``units``, in order), in estimated steps, and what the budget or a step left out."""

    budget_s: float
    step_s: float
    cores: int
    gpu_cores: int
    units: list[Unit]
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (what, why)
    isa: str = "native"  # the CPU instruction set every run is built for (runner/core/isa.py)

    def items(self, lane: str) -> list[Item]:
        return [item for unit in self.units for item in unit.items if item.lane == lane]

    def as_dict(self) -> dict:
        return {
            "budget_s": self.budget_s,
            "step_s": self.step_s,
            "cores": self.cores,
            "gpu_cores": self.gpu_cores,
            "isa": self.isa,
            "units": [
                {"phase": u.phase, "label": u.label, "items": [i.as_dict() for i in u.items]} for u in self.units
            ],
            "left_out": [list(x) for x in self.left_out],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        units = [Unit(u["phase"], u["label"], [Item.from_dict(i) for i in u["items"]]) for u in d["units"]]
        left_out = [tuple(x) for x in d["left_out"]]
        return cls(d["budget_s"], d["step_s"], d["cores"], d["gpu_cores"], units, left_out, d.get("isa", "native"))


def steps(lanes: dict[str, list[Item]], step_s: float, first_step_s: float = 0.0) -> list[dict[str, list[Item]]]:
    """The lanes' items cut into steps as the runner cuts them: within a step each lane runs its items in order
    and stops at the first one whose estimate exceeds the step's time left (the first step starts
    ``first_step_s`` in: compiling the Stan programs). An item longer than a whole step never runs (the planner
    leaves such items out)."""
    queues = {lane: list(items) for lane, items in lanes.items()}
    cut: list[dict[str, list[Item]]] = []
    used = first_step_s
    while any(queues.values()):
        step = {}
        for lane, queue in queues.items():
            left, taken = step_s - used, []
            while queue and queue[0].estimate_s <= left:
                left -= queue[0].estimate_s
                taken.append(queue.pop(0))
            step[lane] = taken
        if not any(step.values()) and not used:  # a first step the compilation filled is a step all the same
            raise ValueError(f"an item is longer than a step: {[q[0].label() for q in queues.values() if q]}")
        cut.append(step)
        used = 0.0
    return cut


def step_wall_s(step: dict[str, list[Item]]) -> float:
    return max((sum(item.estimate_s for item in items) for items in step.values()), default=0.0)


def estimated_s(lanes: dict[str, list[Item]], step_s: float, first_step_s: float) -> float:
    """The plan's estimated machine time: every step's longest lane, the first step's compile included."""
    return first_step_s + sum(step_wall_s(step) for step in steps(lanes, step_s, first_step_s))


def _jobs(
    spec,
    config: RunConfig,
    engines_by_lane: dict[str, tuple[str, ...]],
    repeats: int,
    entropy: int,
    cores: int,
    gpu_cores: int,
    x64: bool = True,
    chain_method: str | None = None,
    isa: str = "native",
) -> dict[str, list[Job]]:
    """The jobs of one unit per lane, in run order (repeat by repeat: block by block, the engines' order within a
    lane alternating from block to block, as `stanjax run` orders them); the GPU in float64 unless ``x64`` is
    False; Stan with the lane's cores: its chains × threads a chain fill them (the reduce_sum program where the
    model has one)."""
    config = config.for_model(spec)
    lanes = {}
    for lane, engines in engines_by_lane.items():
        first, count = (0, gpu_cores) if lane == "gpu" else (gpu_cores, cores - gpu_cores)
        lanes[lane] = [
            Job(
                spec.id,
                engine,
                config,
                repeat,
                with_threads(
                    replace(entry(engine).placement(lane, x64 and lane == "gpu", chain_method), isa=isa),
                    engine,
                    entry(engine).front_end(),
                    spec,
                    count,
                    config,
                    max(1, count // config.chains),
                ),
                entry(engine).front_end(),
                entropy,
                count,
                first,
            )
            for repeat in range(repeats)
            for engine in block_order(engines, repeat)
        ]
    return lanes


def units(cores: int, gpu_cores: int, entropy: int, estimate: Estimator, isa: str = "native") -> list[Unit]:
    """Every unit of every phase, in priority order, each item with its estimate; every run built for ``isa``."""
    default = RunConfig(size="default", chains=CHAINS, warmup=WARMUP, draws=DRAWS)
    large = RunConfig(size="large", chains=CHAINS, warmup=WARMUP, draws=DRAWS)
    others = [spec for model_id, spec in models.registry().items() if model_id not in QUICK_MODELS]
    found: list[Unit] = []

    def unit(phase: str, label: str, spec, config, engines, blocks, study: str = "", **options) -> None:
        lanes = _jobs(spec, config, engines, blocks, entropy, cores, gpu_cores, isa=isa, **options)
        items = [Item(lane, study, *estimate(job), job=job) for lane, jobs in lanes.items() for job in jobs]
        found.append(Unit(phase, label, items))

    big_data = {"gpu": ("numpyro", "blackjax_nuts"), "cpu": ("stan",)}
    for model_id in CLAIM_MODELS:
        unit("claims", f"{model_id} large", models.get(model_id), large, big_data, HEADLINE_BLOCKS)
    study_warmup, study_draws = ITERATIONS["gpu"]
    for model_id, grid in DATA_SIZES.items():
        spec = models.get(model_id)
        assert spec.n_key is not None, f"{model_id} is in DATA_SIZES without an n_key"
        for n in grid:
            config = RunConfig(size="default", warmup=study_warmup, draws=study_draws, resize=((spec.n_key, n),))
            engines = {**big_data, "cpu": CPU_PAIR if n == min(grid) else ("stan",)}
            unit("data", f"{model_id} {spec.n_key}={n:,}", spec, config, engines, 1, study="data-size")
    chains_study = STUDIES["chains"]
    for chains in chains_study.grids["gpu"]:
        for spec in chains_study.models():
            config = RunConfig(size="small", chains=chains, warmup=study_warmup, draws=study_draws)
            engines = {"gpu": ("numpyro", "blackjax_chees")}
            unit("chains", f"{spec.id} {chains} chains", spec, config, engines, 1, "chains", chain_method="vectorized")
        found.append(rwmh_unit(chains, (("gpu", "jax"), ("cpu", "numpy")), estimate))
    for spec in chains_study.models():  # the many-chain answer Stan's user has: a chain on every core
        config = RunConfig(size="small", chains=cores - gpu_cores, warmup=study_warmup, draws=study_draws)
        unit("chains", f"{spec.id} Stan, a chain a core", spec, config, {"cpu": ("stan",)}, 1, "chains")
    found.append(rwmh_unit(RLOUF_CHAINS, (("gpu", "jax"), ("cpu", "jax")), estimate, "rlouf's 1e9 draws: "))
    for model_id in QUICK_MODELS:
        engines = {"gpu": GPU_SAMPLERS, "cpu": CPU_PAIR}
        unit("zoo", f"{model_id} default", models.get(model_id), default, engines, HEADLINE_BLOCKS)
    for spec in others:
        unit("zoo", f"{spec.id} default", spec, default, {"gpu": ("numpyro",), "cpu": CPU_PAIR}, HEADLINE_BLOCKS)
    for model_id in QUICK_MODELS:
        spec = models.get(model_id)
        unit("float32", f"{model_id} default float32", spec, default, {"gpu": ("numpyro",)}, EXTRA_BLOCKS, x64=False)
    unit(
        "float32",
        f"{COVTYPE} large float32",
        models.get(COVTYPE),
        large,
        {"gpu": ("numpyro",)},
        EXTRA_BLOCKS,
        x64=False,
    )
    for spec in others:
        unit("blackjax", f"{spec.id} default BlackJAX", spec, default, {"gpu": BLACKJAX_ENGINES}, EXTRA_BLOCKS)
    return found


def rwmh_device(lane: str, backend: str) -> str:
    """Where a random-walk measurement runs: JAX on the GPU in the GPU lane, else on the lane's CPUs."""
    return "gpu" if lane == "gpu" and backend == "jax" else "cpu"


def rwmh_unit(chains: int, lanes, estimate: Estimator, label: str = "") -> Unit:
    """Random-walk Metropolis at ``chains`` chains × the GPU scale's steps, a measurement per (lane, backend)."""
    items = [
        Item(lane, "chains", *estimate.measurement(backend, rwmh_device(lane, backend), chains), rwmh=(chains, backend))
        for lane, backend in lanes
    ]
    return Unit("chains", f"{label}random-walk Metropolis {chains:,} chains", items)


def make_plan(
    budget_s: float,
    step_s: float,
    cores: int,
    gpu_cores: int,
    estimate: Estimator,
    compile_s: float,
    phases: tuple[str, ...] = tuple(PHASES),
    isa: str = "native",
) -> Plan:
    """Units in priority order while the estimated machine time fits ``budget_s``; a unit that does not fit is
    left out and later (smaller) ones may still go in. Runs longer than one step are left out of their unit."""
    plan = Plan(budget_s, step_s, cores, gpu_cores, [], isa=isa)
    entropy = campaign_entropy()
    for unit in units(cores, gpu_cores, entropy, estimate, isa):
        if unit.phase not in phases:
            continue
        too_long = [item for item in unit.items if item.estimate_s > step_s]
        for item in too_long:
            plan.left_out.append(
                (
                    f"{unit.phase}: {item.label()}",
                    f"about {item.estimate_s / 60:.0f} min ({item.basis}): longer than one step of {step_s / 60:g} min",
                )
            )
        unit = replace(unit, items=[item for item in unit.items if item not in too_long])
        if not unit.items:
            continue
        trial = plan.units + [unit]
        lanes = {lane: [i for u in trial for i in u.items if i.lane == lane] for lane in ("gpu", "cpu")}
        need = estimated_s(lanes, step_s, compile_s)
        if need <= budget_s:
            plan.units.append(unit)
        else:
            plan.left_out.append(
                (
                    f"{unit.phase}: {unit.label}",
                    f"over the budget (the plan with it: about {need / 60:.0f} of {budget_s / 60:g} min)",
                )
            )
    return plan

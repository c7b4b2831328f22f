"""Scaling studies: the same runs as ``stanjax run`` along one axis, plus measurements that are not runs.

Each :class:`Study` declares its axis, its grid per scale (``tiny``: CI, seconds; ``cpu``: this kind of machine,
minutes; ``gpu``: the published sizes), its engines per device and what it measures. Which models a study uses, and
which of a model's size entries is its N, are facts of the model (``ModelSpec.studies``, ``n_key``,
``shard_rows``, ``shard_sizes``), not of the study.

- ``data-size``: N (rows, matches) grown, Stan vs JAX engines; the report looks for the crossover N where JAX
  overtakes Stan (Ingram 2021 saw ~50k matches on a GPU).
- ``chains``: many vectorised chains (NumPyro NUTS, BlackJAX ChEES), and random-walk Metropolis on rlouf's mixture
  in JAX and in NumPy: draws/s and ESS/s per chain count.
- ``devices``: log density + gradient with the data rows sharded over 1, 2, 4, ... devices: ms per gradient.
- ``roofline``: ms per gradient against N, measured before any sampling (:mod:`stanjax.runner.measure.gradient_cost`),
  beside a GPU's memory-bandwidth floor (the report's roofline figure).
- ``survey``: ms per gradient of every posteriordb posterior in the zoo, each side on both clocks (a compiled loop,
  and inside its NUTS), one core, float64, in interleaved rounds (the field's per-gradient surveys: TuringLang's
  DynamicPPL comparison over posteriordb, StanBlocks.jl).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stanjax import models
from stanjax.models import ModelSpec
from stanjax.runner.core import environment, records
from stanjax.runner.core.config import Job, RunConfig

SCALES = ("tiny", "cpu", "gpu")
ITERATIONS = {"tiny": (300, 300), "cpu": (1000, 1000), "gpu": (1000, 1000)}  # warmup, draws of every study run
RWMH_STEPS = {"tiny": 1_000, "cpu": 10_000, "gpu": 10_000}
RWMH_STEP_SIZE = 2.5
RLOUF_CHAINS = 100_000  # × RWMH_STEPS["gpu"]: rlouf's 1e9 draws in one run (the GPU campaign's chains phase)
ESS_MAX_CHAINS = 16_384  # above it ESS is left out: rank-normalising 1e9 draws on the host would outlast the run
GRADIENT_REPEATS = {"tiny": 20, "cpu": 100, "gpu": 1_000}
RWMH = "rwmh"  # the chains study's random-walk measurements, selectable with --engines like an engine


@dataclass(frozen=True)
class Study:
    """A scaling study: ``axis`` grows over ``grids[scale]``; ``engines[device]`` are the sampler engines (and
    ``rwmh``) it runs there; ``jobs`` builds its sampler runs, ``measure`` its other measurements (appended to
    ``measurements.jsonl``), ``measures`` says in words what it measures."""

    name: str
    axis: str
    grids: dict[str, list[int]]
    engines: dict[str, tuple[str, ...]]
    measures: str
    jobs: Callable[..., list[Job]] = lambda *_: []
    measure: Callable[..., None] | None = None
    chooses: Callable[[], list[ModelSpec]] | None = None  # its models, where the specs' own ``studies`` do not say

    def models(self) -> list[ModelSpec]:
        if self.chooses:
            return self.chooses()
        return [spec for spec in models.registry().values() if self.name in spec.studies]


def data_size_jobs(study: Study, scale: str, engines, placement, max_n: int | None) -> list[Job]:
    """Every (model, N, engine): the model's default preset (tiny at the tiny scale) with its N resized.
    ``placement(engine, chain_method, chains)`` is the run command's device policy: (placement, front end)."""
    warmup, draws = ITERATIONS[scale]
    jobs = []
    for spec in study.models():
        assert spec.n_key is not None, f"{spec.id} is in the data-size study without an n_key"
        size = "tiny" if scale == "tiny" else "default"
        for n in [n for n in study.grids[scale] if max_n is None or n <= max_n]:
            config = RunConfig(size=size, warmup=warmup, draws=draws, resize=((spec.n_key, n),)).for_model(spec)
            jobs += [Job(spec.id, engine, config, 0, *placement(engine, None, config.chains)) for engine in engines]
    return jobs


def chains_jobs(study: Study, scale: str, engines, placement, max_n: int | None) -> list[Job]:
    """Every (model, chain count, engine), chains vectorised, at the small preset (tiny at the tiny scale)."""
    warmup, draws = ITERATIONS[scale]
    size = "tiny" if scale == "tiny" else "small"
    return [
        Job(
            spec.id,
            engine,
            RunConfig(size=size, chains=chains, warmup=warmup, draws=draws).for_model(spec),
            0,
            *placement(engine, "vectorized", chains),
        )
        for spec in study.models()
        for chains in study.grids[scale]
        for engine in engines
        if engine != RWMH
    ]


def rwmh_measurements(study: Study, scale: str, device: str, engines, out, done: list[dict], timeout_s: float, **_):
    """Random-walk Metropolis per chain count, in JAX (on ``device``) and in NumPy; those in ``done`` skipped."""
    if RWMH not in engines:
        return
    measured = {(m["backend"], m["chains"], m["steps"]) for m in done if m.get("measure") == "rwmh"}
    for chains in study.grids[scale]:
        for backend in ("jax", "numpy"):
            if (backend, chains, RWMH_STEPS[scale]) not in measured:
                env = {"JAX_PLATFORMS": "cuda" if device == "gpu" and backend == "jax" else "cpu"}
                row = measure(["rwmh", scale, str(chains), backend], env, timeout_s)
                assert isinstance(row, dict), "an rwmh measurement prints one JSON object"
                records.append(out, records.measurement(study.name, {"measure": "rwmh", **row}))
                print(f"rwmh {backend} {chains} chains: {row['draws_per_s']:.3g} draws/s, {row['ess_per_s']:.3g} ESS/s")


def devices_measurements(
    study: Study,
    scale: str,
    device: str,
    engines,
    out,
    done,
    timeout_s: float,
    simulate_devices: int | None = None,
    processes: int = 1,
):
    """ms per sharded gradient on 1, 2, 4, ... devices; with ``processes`` > 1, as that many JAX processes on this
    host, the simulated devices split among them (process 0's measurements are recorded)."""
    if processes > 1:
        from stanjax.runner.campaigns import sharding

        rows = sharding.launch(
            "stanjax.runner.campaigns.studies",
            ["devices", scale],
            processes,
            (simulate_devices or processes) // processes,
            environment.worker_env(),
            timeout_s,
        )[0]
    else:
        env = {"JAX_PLATFORMS": "cuda" if device == "gpu" else "cpu"}
        if simulate_devices:
            env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={simulate_devices}"
        rows = measure(["devices", scale], env, timeout_s)
    for row in rows:
        records.append(out, records.measurement(study.name, {"measure": "sharded_gradient", **row}))
        print(f"{row['model_id']} on {row['devices']} device(s): {row['ms_per_gradient']:.3f} ms per gradient")


def roofline_measurements(study: Study, scale: str, device: str, engines, out, done: list[dict], timeout_s: float, **_):
    """ms per gradient at every N of the grid, each side as its sampler computes it (:mod:`gradient_cost`):
    Stan on one core inside its NUTS where "stan" is asked, JAX where "numpyro" is (float64, and float32 on a
    GPU), one chain a call; those in ``done`` skipped."""
    from stanjax.runner.measure import gradient_cost

    precisions = ("float64", "float32") if device == "gpu" else ("float64",)
    sides = [("stan", "cpu", "float64")] if "stan" in engines else []
    sides += [("jax", device, precision) for precision in precisions if "numpyro" in engines]
    size = "tiny" if scale == "tiny" else "default"
    setups = [
        {
            "side": side,
            "model_id": spec.id,
            "size": size,
            "sizes": spec.size_kwargs(size, ((spec.n_key, n),)),
            "device": where,
            "precision": precision,
            "chains": 1,
            "threads": 1,
        }
        for spec in study.models()
        for n in study.grids[scale]
        for side, where, precision in sides
    ]
    measured = {gradient_cost.setup_key(m) for m in done if m.get("measure") == "gradient_cost"}
    left = [s for s in setups if gradient_cost.setup_key(s) not in measured]
    for row in gradient_cost.measure_setups(left, timeout_s=timeout_s):
        records.append(out, records.measurement(study.name, {"measure": "gradient_cost", **row}))


def survey_models() -> list[ModelSpec]:
    """The posteriordb posteriors of the zoo (:func:`stanjax.models.posteriordb.carried`), by ID."""
    from stanjax.models import posteriordb

    return [spec for _, spec in sorted(models.registry().items()) if posteriordb.carried(spec)]


def survey_measurements(study: Study, scale: str, device: str, engines, out, done: list[dict], timeout_s: float, **_):
    """Every posteriordb posterior's ms per gradient at its data, each side on both clocks
    (:mod:`stanjax.runner.measure.gradient_clocks`: in a compiled loop at one point, and inside its NUTS; one chain,
    float64), Stan's program as published and, where the model has one, as an expert writes it, all on the first core
    this process may use; round by round, the sides' order and the clocks' alternating (Stan first and the loop
    first in odd rounds), so a slow spell of the machine falls on both; those in ``done`` skipped."""
    from stanjax.runner.measure import gradient_cost
    from stanjax.runner.measure.gradient_clocks import CLOCKS

    size = "tiny" if scale == "tiny" else "default"
    core = [sorted(os.sched_getaffinity(0))[0]]
    sides = [side for side, engine in (("stan", "stan"), ("jax", "numpyro")) if engine in engines]
    measured = {(gradient_cost.setup_key(m), m.get("round")) for m in done if m.get("measure") == "gradient_cost"}
    for round_ in study.grids[scale]:
        for side, clock in [(side, clock) for side in sides for clock in CLOCKS][:: 1 if round_ % 2 else -1]:
            setups = [
                {
                    "side": side,
                    "clock": clock,
                    "model_id": spec.id,
                    "size": size,
                    "sizes": spec.size_kwargs(size),
                    "device": "cpu",
                    "precision": "float64",
                    "chains": 1,
                    "threads": 1,
                    **({"program": program} if program else {}),
                }
                for spec in study.models()
                for program in ["", *(["expert"] if side == "stan" and spec.stan_expert_file else [])]
            ]
            left = [s for s in setups if (gradient_cost.setup_key(s), round_) not in measured]
            for row in gradient_cost.measure_setups(left, cpus=core, timeout_s=timeout_s):
                records.append(
                    out, records.measurement(study.name, {"measure": "gradient_cost", "round": round_, **row})
                )


STUDIES = {
    study.name: study
    for study in (
        Study(
            "data-size",
            axis="N",
            grids={
                "tiny": [300, 1_200],
                "cpu": [1_000, 3_000, 10_000, 30_000],
                "gpu": [1_000, 10_000, 100_000, 1_000_000],
            },
            engines={"cpu": ("stan", "numpyro"), "gpu": ("stan", "numpyro", "blackjax_nuts")},
            measures="ESS/s and ms per gradient of Stan and JAX as N grows: where does JAX overtake Stan?",
            jobs=data_size_jobs,
        ),
        Study(
            "chains",
            axis="chains",
            grids={"tiny": [4, 16], "cpu": [4, 16, 64, 256], "gpu": [4, 64, 1_024, 16_384]},
            engines={device: ("numpyro", "blackjax_chees", RWMH) for device in ("cpu", "gpu")},
            measures="draws/s and ESS/s of vectorised NUTS and ChEES, and of random-walk Metropolis in JAX and NumPy, "
            "as the chains grow",
            jobs=chains_jobs,
            measure=rwmh_measurements,
        ),
        Study(
            "devices",
            axis="devices",
            grids={scale: [1, 2, 4, 8, 16, 32] for scale in SCALES},
            engines={"cpu": (), "gpu": ()},
            measures="ms per log density + gradient with the data rows sharded over 1, 2, 4, ... devices",
            measure=devices_measurements,
        ),
        Study(
            "roofline",
            axis="N",
            grids={
                "tiny": [200, 2_000],
                "cpu": [1_000, 10_000, 100_000, 581_012],
                "gpu": [1_000, 10_000, 100_000, 581_012, 1_000_000],
            },
            engines={"cpu": ("stan", "numpyro"), "gpu": ("numpyro",)},
            measures="ms per log density + gradient against N before any sampling, Stan's inside its NUTS on one core "
            "and JAX's in a compiled loop (float64; float32 too on a GPU), beside the GPU's memory-bandwidth floor",
            measure=roofline_measurements,
        ),
        Study(
            "survey",
            axis="round",
            grids={"tiny": [1], "cpu": [1, 2, 3], "gpu": [1, 2, 3]},
            engines={"cpu": ("stan", "numpyro"), "gpu": ()},
            measures="ms per log density + gradient of every posteriordb posterior in the zoo, each side in a compiled "
            "loop and inside its NUTS, one core, float64, in interleaved rounds: JAX's cost relative to Stan's across "
            "them, on equal clocks",
            measure=survey_measurements,
            chooses=lambda: survey_models(),  # looked up when called: a test's own list stands in
        ),
    )
}


def rwmh_measurement(scale: str, chains: int, backend: str, seed: int = 0) -> dict:
    """Random-walk Metropolis on the mixture: wall time, draws/s, bulk ESS (arviz) and ESS/s (None above
    ``ESS_MAX_CHAINS`` chains)."""
    import arviz as az
    import xarray as xr

    from stanjax.runner.campaigns import rwmh

    steps = RWMH_STEPS[scale]
    initial = np.zeros(chains)
    device = "cpu"
    if backend == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        device = "cpu" if jax.default_backend() == "cpu" else "gpu"
        run = (
            jax.jit(rwmh.rwmh_jax, static_argnums=(2, 3))
            .lower(jax.random.PRNGKey(seed), initial, steps, RWMH_STEP_SIZE)
            .compile()
        )
        start = time.perf_counter()
        draws, acceptance = jax.block_until_ready(run(jax.random.PRNGKey(seed), initial))
        wall = time.perf_counter() - start
    else:
        start = time.perf_counter()
        draws, acceptance = rwmh.rwmh_numpy(seed, initial, steps, RWMH_STEP_SIZE)
        wall = time.perf_counter() - start
    ess = None
    if chains <= ESS_MAX_CHAINS:
        kept = np.asarray(draws)[steps // 2 :].T  # (chains, draws): the first half is burn-in
        ess = float(az.ess(xr.Dataset({"x": (("chain", "draw"), kept)}), method="bulk")["x"])
    return {
        "backend": backend,
        "device": device,
        "chains": chains,
        "steps": steps,
        "wall_s": wall,
        "draws_per_s": chains * steps / wall,
        "ess_bulk": ess,
        "ess_per_s": None if ess is None else ess / wall,
        "acceptance": float(acceptance),
    }


def devices_measurement(scale: str) -> list[dict]:
    """ms per (log density + gradient) with the data rows split over 1, 2, 4, ... of the visible devices. With
    several JAX processes, every count is a multiple of the processes and takes as many devices from each."""
    import jax
    import numpyro

    from stanjax.runner.campaigns import sharding

    numpyro.enable_x64()
    rows = []
    processes = jax.process_count()
    by_process = [[d for d in jax.devices() if d.process_index == p] for p in range(processes)]
    counts = [n for n in STUDIES["devices"].grids[scale] if n <= len(jax.devices()) and n % processes == 0]
    for spec in STUDIES["devices"].models():
        sizes = spec.shard_sizes[scale]
        data = spec.generate(1, **sizes)
        energy, z = sharding.potential_and_gradient(spec, data)
        for n in counts:
            devices = [d for mine in by_process for d in mine[: n // processes]]
            _, arrays = sharding.split_static(sharding.shard_rows(data, spec, devices))
            jax.block_until_ready(energy(z, arrays))
            start = time.perf_counter()
            for _ in range(GRADIENT_REPEATS[scale]):
                out = energy(z, arrays)
            jax.block_until_ready(out)
            rows.append(
                {
                    "model_id": spec.id,
                    "sizes": sizes,
                    "devices": n,
                    "processes": processes,
                    "backend": jax.default_backend(),
                    "ms_per_gradient": (time.perf_counter() - start) / GRADIENT_REPEATS[scale] * 1e3,
                }
            )
    return rows


def main(argv: list[str]) -> int:
    """``python -m stanjax.runner.campaigns.studies rwmh SCALE CHAINS BACKEND`` or ``devices SCALE [--processes N --process-id I
    --coordinator HOST:PORT]``: one JSON line to stdout.

    A fresh process per measurement, as for runs: the device count and precision are fixed at JAX start-up.
    ``STANJAX_CPUS`` (e.g. "2,3"): the CPUs it runs on, pinned before JAX starts (a GPU campaign's lanes)."""
    if os.environ.get("STANJAX_CPUS"):
        os.sched_setaffinity(0, [int(cpu) for cpu in os.environ["STANJAX_CPUS"].split(",")])
    if argv[0] == "rwmh":
        print(json.dumps(rwmh_measurement(argv[1], int(argv[2]), argv[3])))
    else:
        if "--processes" in argv:
            from stanjax.runner.campaigns import sharding

            options = dict(zip(argv[2::2], argv[3::2]))
            sharding.start_distributed(
                int(options["--processes"]), int(options["--process-id"]), options["--coordinator"]
            )
        print(json.dumps(devices_measurement(argv[1])))
    return 0


def measure(args: list[str], env: dict | None = None, timeout_s: float = 3600) -> dict | list:
    """Run one measurement in a child process; its JSON result."""
    done = environment.run_module("stanjax.runner.campaigns.studies", args, env, timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"study measurement {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

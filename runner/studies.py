"""Scaling studies: the same runs as ``stanjax run`` along one axis, plus two measurements that are not runs.

- ``data-size``: logistic regression and Bradley–Terry with N (rows / matches) grown, Stan vs JAX engines; the
  report looks for the crossover N where JAX overtakes Stan (Ingram 2021 saw ~50k matches on a GPU).
- ``chains``: many vectorised chains (NumPyro NUTS, BlackJAX ChEES) on logistic regression, and random-walk
  Metropolis on rlouf's mixture in JAX and in NumPy: draws/s and ESS/s per chain count.
- ``devices``: log density + gradient of logistic regression and matrix factorisation with the data rows
  sharded over 1, 2, 4, ... devices: ms per gradient per device count.

Each study has a ``tiny`` grid (CI, seconds), a ``cpu`` grid (this kind of machine, minutes) and a ``gpu`` grid.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from models import ROOT
from runner import records

LOGISTIC = "covtype_synth-logistic_regression"
BRADLEY_TERRY = "tennis_synth-bradley_terry_hierarchical"
MATRIX_FACTORIZATION = "movielens_synth-matrix_factorization"

DATA_SIZE = {  # model -> (size preset, size entry grown, grid per scale)
    LOGISTIC: ("default", "N", {"tiny": [200, 800], "cpu": [1_000, 3_000, 10_000, 30_000],
                                "gpu": [1_000, 10_000, 100_000, 581_012]}),
    BRADLEY_TERRY: ("default", "n_matches", {"tiny": [300, 1_200], "cpu": [1_000, 3_000, 10_000, 30_000],
                                             "gpu": [1_000, 10_000, 100_000, 1_000_000]}),
}
DATA_SIZE_TINY_PRESET = "tiny"  # the tiny grid resizes the tiny presets
CHAINS = {"tiny": [4, 16], "cpu": [4, 16, 64, 256], "gpu": [4, 64, 1_024, 16_384]}
CHAINS_ENGINES = ("numpyro", "blackjax_chees")
RWMH_STEPS = {"tiny": 1_000, "cpu": 10_000, "gpu": 10_000}
RWMH_STEP_SIZE = 2.5
DEVICES_SIZES = {  # the data the devices study shards, per scale
    "tiny": {LOGISTIC: {"N": 800, "D": 5}, MATRIX_FACTORIZATION: {"U": 32, "M": 20, "K": 2}},
    "cpu": {LOGISTIC: {"N": 80_000, "D": 54}, MATRIX_FACTORIZATION: {"U": 320, "M": 200, "K": 5}},
    "gpu": {LOGISTIC: {"N": 581_008, "D": 54}, MATRIX_FACTORIZATION: {"U": 6_040, "M": 3_706, "K": 20}},
}
GRADIENT_REPEATS = {"tiny": 20, "cpu": 100, "gpu": 1_000}


def rwmh_measurement(scale: str, chains: int, backend: str, seed: int = 0) -> dict:
    """Random-walk Metropolis on the mixture: wall time, draws/s, bulk ESS (arviz) and ESS/s."""
    import arviz as az
    import xarray as xr

    from runner import rwmh

    steps = RWMH_STEPS[scale]
    initial = np.zeros(chains)
    device = "cpu"
    if backend == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        device = "cpu" if jax.default_backend() == "cpu" else "gpu"
        run = jax.jit(rwmh.rwmh_jax, static_argnums=(2, 3)).lower(
            jax.random.PRNGKey(seed), initial, steps, RWMH_STEP_SIZE).compile()
        start = time.perf_counter()
        draws, acceptance = jax.block_until_ready(run(jax.random.PRNGKey(seed), initial))
        wall = time.perf_counter() - start
    else:
        start = time.perf_counter()
        draws, acceptance = rwmh.rwmh_numpy(seed, initial, steps, RWMH_STEP_SIZE)
        wall = time.perf_counter() - start
    kept = np.asarray(draws)[steps // 2:].T  # (chains, draws): the first half is burn-in
    ess = float(az.ess(xr.Dataset({"x": (("chain", "draw"), kept)}), method="bulk")["x"])
    return {"backend": backend, "device": device, "chains": chains, "steps": steps, "wall_s": wall,
            "draws_per_s": chains * steps / wall, "ess_bulk": ess, "ess_per_s": ess / wall,
            "acceptance": float(acceptance)}


def devices_measurement(scale: str) -> list[dict]:
    """ms per (log density + gradient) with the data rows split over 1, 2, 4, ... of the visible devices."""
    import jax
    import numpyro

    import models
    from runner import sharding

    numpyro.enable_x64()
    rows = []
    counts = [n for n in (1, 2, 4, 8, 16, 32) if n <= len(jax.devices())]
    for model_id, sizes in DEVICES_SIZES[scale].items():
        data = models.get(model_id).generate(1, **sizes)
        energy, z = sharding.potential_and_gradient(model_id, data)
        for n in counts:
            _, arrays = sharding.split_static(sharding.shard_rows(data, model_id, jax.devices()[:n]))
            jax.block_until_ready(energy(z, arrays))
            start = time.perf_counter()
            for _ in range(GRADIENT_REPEATS[scale]):
                out = energy(z, arrays)
            jax.block_until_ready(out)
            rows.append({"model_id": model_id, "sizes": sizes, "devices": n,
                         "backend": jax.default_backend(),
                         "ms_per_gradient": (time.perf_counter() - start) / GRADIENT_REPEATS[scale] * 1e3})
    return rows


def main(argv: list[str]) -> int:
    """``python -m runner.studies rwmh SCALE CHAINS BACKEND`` or ``devices SCALE``: one JSON line to stdout.

    A fresh process per measurement, as for runs: the device count and precision are fixed at JAX start-up."""
    if argv[0] == "rwmh":
        print(json.dumps(rwmh_measurement(argv[1], int(argv[2]), argv[3])))
    else:
        print(json.dumps(devices_measurement(argv[1])))
    return 0


def measure(args: list[str], env: dict | None = None, timeout_s: float = 3600) -> dict | list:
    """Run one measurement in a child process; its JSON result."""
    done = subprocess.run([sys.executable, "-m", "runner.studies", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout_s, env={**records.worker_env(), **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"study measurement {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

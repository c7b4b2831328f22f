"""Data-parallel log densities: a model's data rows split over every visible device, parameters replicated.

As in TFP-on-JAX's sharded logistic regression and matrix factorisation: the data arrays are placed with a
``NamedSharding`` over a one-axis mesh, and jit partitions the log density and its gradient (each device sums
its rows; XLA adds the all-reduce). ``python -m stanjax.runner.campaigns.sharding`` checks on the visible devices that the sharded
log density and gradient equal the single-device ones and that a short NUTS run works on sharded data (the
data enter every jitted function as arguments: a closed-over array would be replicated, not split); with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` a CPU stands in for 8 devices.

Several processes (several hosts, or one host split for a test): ``python -m stanjax.runner.campaigns.sharding --processes N
--process-id I --coordinator HOST:PORT`` on each calls :func:`start_distributed` (``jax.distributed.initialize``,
CPU collectives through gloo) before anything else touches JAX; ``jax.devices()`` then lists every process's
devices, the same mesh spans them, and each process places only its own rows (``make_array_from_callback``). On
Slurm, ``jax.distributed.initialize()`` finds the arguments itself (see the README).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np

from stanjax import jax_models, models

MESH_AXIS = "rows"


def shard_rows(data: dict, spec: models.ModelSpec, devices) -> dict:
    """``data`` with its row arrays (``spec.shard_rows``: observations and their covariates) split evenly over
    ``devices``; sizes and other entries untouched."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    rows = NamedSharding(Mesh(np.array(devices), (MESH_AXIS,)), PartitionSpec(MESH_AXIS))
    out = dict(data)
    for key in spec.shard_rows:
        if len(data[key]) % len(devices):
            raise ValueError(f"{spec.id}: {len(data[key])} rows of '{key}' do not split over {len(devices)} devices")
        value = np.asarray(data[key])  # every process made the same data; each places the rows of its devices
        out[key] = jax.make_array_from_callback(value.shape, rows, value.__getitem__)
    return out


def start_distributed(processes: int, process_id: int, coordinator: str) -> None:
    """Join a multi-process JAX run: N processes, this one ``process_id``, CPU collectives through gloo."""
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=processes, process_id=process_id)


def launch(
    module: str,
    args: list[str],
    processes: int,
    devices_per_process: int,
    env: dict | None = None,
    timeout_s: float = 600,
) -> list:
    """Run ``python -m module args`` as ``processes`` JAX processes on this host (each with
    ``devices_per_process`` CPU devices; process 0 coordinates on a free local port) and return each one's last
    output line, parsed as JSON. The path the multi-process test and ``stanjax study devices --processes`` take;
    on several hosts the same module runs once per host with ``--coordinator`` naming host 0 (README)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        **(env or {}),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices_per_process}",
    }
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                *args,
                "--processes",
                str(processes),
                "--process-id",
                str(i),
                "--coordinator",
                f"127.0.0.1:{port}",
            ],
            cwd=models.ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(processes)
    ]
    outputs = []
    try:
        for i, proc in enumerate(procs):
            stdout, stderr = proc.communicate(timeout=timeout_s)
            if proc.returncode != 0:
                last = [line for line in stderr.splitlines() if not line.startswith("[Gloo]")][-1:]
                raise RuntimeError(f"process {i} of {processes} ({module}) failed: {last}")
            outputs.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    return outputs


def local(array) -> np.ndarray:
    """A result as a NumPy array on this process. One spanning other processes' devices (replicated, or split
    like the rows' own parameters) is gathered: every process calls this alike, as collectives need."""
    if getattr(array, "is_fully_addressable", True):
        return np.asarray(array)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(array, tiled=True))


def split_static(data: dict) -> tuple[dict, dict]:
    """(sizes as Python ints, arrays): sizes stay static, arrays travel as jit arguments."""
    static = {k: v for k, v in data.items() if isinstance(v, int)}
    return static, {k: v for k, v in data.items() if k not in static}


def potential_and_gradient(spec: models.ModelSpec, data: dict):
    """A jitted ``(z, arrays) -> (potential energy, gradient)`` and an initial unconstrained point ``z``.

    The data arrays are arguments, not closed-over constants: jit keeps an argument's sharding, while a
    constant captured in a closure is replicated (no partitioning, no all-reduce)."""
    import jax
    from numpyro.infer.util import initialize_model, potential_energy

    model = jax_models.load(spec.jax_file)
    static, _ = split_static(data)
    init, *_ = initialize_model(jax.random.PRNGKey(0), model, model_kwargs=data)
    energy = jax.jit(jax.value_and_grad(lambda z, arrays: potential_energy(model, (), {**static, **arrays}, z)))
    return energy, init.z


def compare(spec: models.ModelSpec, sizes: dict, n_points: int = 3) -> dict:
    """Sharded vs single-device potential and gradient at a few random unconstrained points."""
    import jax

    data = spec.generate(1, **sizes)
    energy, z0 = potential_and_gradient(spec, data)
    _, single = split_static(data)
    _, sharded = split_static(shard_rows(data, spec, jax.devices()))
    worst_value = worst_gradient = 0.0
    for i in range(n_points):
        leaves, tree = jax.tree.flatten(z0)
        keys = jax.random.split(jax.random.PRNGKey(i), len(leaves))
        point = jax.tree.unflatten(tree, [x + 0.3 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)])
        (v1, g1), (v8, g8) = energy(point, single), energy(point, sharded)
        v1, v8 = float(local(v1)), float(local(v8))
        worst_value = max(worst_value, abs(v1 - v8) / max(1.0, abs(v1)))
        for a, b in zip(map(local, jax.tree.leaves(g1)), map(local, jax.tree.leaves(g8))):
            worst_gradient = max(worst_gradient, float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(a)))))
    hlo = energy.lower(z0, sharded).compile().as_text()
    return {
        "model_id": spec.id,
        "sizes": sizes,
        "devices": len(jax.devices()),
        "processes": jax.process_count(),
        "partitioned": "all-reduce" in hlo,
        "max_relative_value_error": worst_value,
        "max_relative_gradient_error": worst_gradient,
    }


def short_nuts(spec: models.ModelSpec, sizes: dict, warmup: int = 100, draws: int = 100) -> dict:
    """Window-adapted BlackJAX NUTS on row-sharded data, warmup and draws in one jitted function whose data
    are arguments; ``partitioned`` is true when XLA split the work (all-reduce in the compiled program)."""
    import blackjax
    import jax
    from numpyro.infer.util import initialize_model, potential_energy

    model = jax_models.load(spec.jax_file)
    data = shard_rows(spec.generate(1, **sizes), spec, jax.devices())
    static, arrays = split_static(data)
    init, *_ = initialize_model(jax.random.PRNGKey(0), model, model_kwargs=data)

    def run(key, z, arrays):
        def logdensity(position):
            return -potential_energy(model, (), {**static, **arrays}, position)

        key_warmup, key_sample = jax.random.split(key)
        (state, parameters), _ = blackjax.window_adaptation(blackjax.nuts, logdensity).run(key_warmup, z, warmup)
        kernel = blackjax.nuts(logdensity, **parameters)
        _, positions = jax.lax.scan(
            lambda s, k: (kernel.step(k, s)[0],) * 2, state, jax.random.split(key_sample, draws)
        )
        return positions.position

    compiled = jax.jit(run).lower(jax.random.PRNGKey(1), init.z, arrays).compile()
    start = time.perf_counter()
    positions = jax.block_until_ready(compiled(jax.random.PRNGKey(1), init.z, arrays))
    seconds = time.perf_counter() - start
    hlo = compiled.as_text()
    if hlo is None:
        raise RuntimeError("this JAX backend gives no text of the compiled program: no telling if XLA partitioned it")
    return {
        "model_id": spec.id,
        "seconds": seconds,
        "draws": int(len(jax.tree.leaves(positions)[0])),
        "finite": bool(all(np.all(np.isfinite(local(v))) for v in jax.tree.leaves(positions))),
        "partitioned": "all-reduce" in hlo,
    }


def main(argv: list[str]) -> int:
    """Every model with row-sharded data, at its tiny sharding sizes: the equality check; NUTS on the first
    (``--warmup``, ``--draws``: its iterations, 100 each by default).
    ``--processes N --process-id I --coordinator HOST:PORT``: as one of N processes (each prints its report)."""
    import argparse

    import numpyro

    parser = argparse.ArgumentParser(prog="python -m stanjax.runner.campaigns.sharding")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--coordinator", default=None, help="HOST:PORT of process 0")
    parser.add_argument("--warmup", type=int, default=100, help="NUTS warmup iterations (default: %(default)s)")
    parser.add_argument("--draws", type=int, default=100, help="NUTS draws (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.processes > 1:
        start_distributed(args.processes, args.process_id, args.coordinator)
    numpyro.enable_x64()
    sharded = [spec for spec in models.registry().values() if spec.shard_rows]
    report = {
        "comparisons": [compare(spec, spec.shard_sizes["tiny"]) for spec in sharded],
        "nuts": [short_nuts(sharded[0], sharded[0].shard_sizes["tiny"], args.warmup, args.draws)],
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

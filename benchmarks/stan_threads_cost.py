"""STAN_THREADS' own cost on programs that use no threads: the bundled Stan (httpstan) builds every module with
STAN_THREADS (Stan Math's autodiff stack then lives in thread-local storage, reached through TLS on every node),
CmdStan only when asked. Each model's program is built by CmdStan both ways (same flags, ISA and main object
otherwise: ``CmdStanBackend.cpp_options`` with ``threaded`` off and on) and run as one chain on one core with the
same seed, so both builds draw the same values through the same trees (checked: the leapfrog counts agree draw for
draw); the cost per gradient is Stan's own sampling clock ÷ the sampling iterations' leapfrog steps. Repetitions
are interleaved (every build of every model once, in an order rotated each repetition, before the next).

    CMDSTAN=/path/to/cmdstan .venv/bin/python benchmarks/stan_threads_cost.py --reps 5 --core 1

Prints a Markdown table: per model, the median ms per gradient of each build and the median over repetitions of
the per-repetition ratio (STAN_THREADS ÷ without: > 1, threads cost that much).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import find_cmdstan
from stanjax.runner.engines.stan_cmdstan import CmdStanBackend

MODELS = (
    "eight_schools-eight_schools_noncentered",
    "dogs-dogs",
    "low_dim_gauss_mix-low_dim_gauss_mix",
    "covtype_synth-logistic_regression",
    "tennis_synth-bradley_terry_hierarchical",
)
BUILDS = {"without STAN_THREADS": False, "STAN_THREADS": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), metavar="ID")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--size", default="default")
    parser.add_argument("--core", type=int, default=0, help="the core every chain runs on (default: 0)")
    args = parser.parse_args(argv)
    cmdstan = find_cmdstan()
    if cmdstan is None:
        print("stan_threads_cost: no CmdStan found (set CMDSTAN)", file=sys.stderr)
        return 2
    os.sched_setaffinity(0, [args.core])  # CmdStan's chain inherits it
    backend = CmdStanBackend(cmdstan)
    specs = [models.get(model_id) for model_id in args.models]
    handles = {
        (spec.id, build): backend.compile(spec.stan_file, "native", threaded=threaded)
        for spec in specs
        for build, threaded in BUILDS.items()
    }
    configs = {spec.id: RunConfig(size=args.size, chains=1).for_model(spec) for spec in specs}
    data = {spec.id: spec.data(args.size, 1) for spec in specs}
    ms: dict[tuple[str, str], list[float]] = {key: [] for key in handles}
    keys = list(handles)
    for rep in range(args.reps):
        leapfrogs: dict[str, list] = {}
        for model_id, build in keys[rep % len(keys) :] + keys[: rep % len(keys)]:
            result = backend.sample(handles[model_id, build], data[model_id], configs[model_id], seed=1000 + rep)
            steps = result.stats.n_leapfrog[0]
            if leapfrogs.setdefault(model_id, list(steps)) != list(steps):
                raise RuntimeError(f"{model_id}: the two builds took different trees in repetition {rep + 1}")
            ms[model_id, build].append(1000 * result.timings.detail["chain_sampling_s"][0] / steps.sum())
        print(f"repetition {rep + 1} of {args.reps} done", file=sys.stderr, flush=True)
    names = list(BUILDS)
    print(f"| model | {names[0]} ms a gradient | {names[1]} ms a gradient | {names[1]} ÷ {names[0]} |")
    print("|---|---:|---:|---:|")
    for spec in specs:
        off, on = ms[spec.id, names[0]], ms[spec.id, names[1]]
        ratio = statistics.median(b / a for a, b in zip(off, on))
        print(f"| {spec.id} | {statistics.median(off):.4f} | {statistics.median(on):.4f} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Whether the engines agree on a model judged by its predictions (``ModelSpec.judged_by_quantities``: the Bayesian
neural network, whose weights have no reference): the held-out log predictive density of each run,
lpd = sum_j log E[lik_test[j]], from the posterior means of the held-out likelihoods its record keeps, with its
Monte Carlo standard error by the delta method (the root of sum_j (mcse_j / mean_j)^2, the points' errors taken
as independent). Per model and engine: the median over the valid runs, the runs' own spread, and the two engines'
difference in units of their combined MCSE.

    .venv/bin/stanjax run --models curve_synth-bayesian_neural_network --size default --repeats 5 --out /tmp/bnn
    .venv/bin/python benchmarks/held_out_lpd.py /tmp/bnn

Exit 1 when two engines' median lpds differ by more than ``--limit`` combined MCSEs (default 3).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from stanjax import models
from stanjax.runner.core import records, superseded
from stanjax.runner.measure.metrics import held_out_lpd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="a results folder (or results.jsonl)")
    parser.add_argument("--limit", type=float, default=3.0, help="combined MCSEs (default: %(default)s)")
    args = parser.parse_args(argv)
    runs = defaultdict(list)
    entries = superseded.load()
    for r in records.read(args.results):
        if r.status != "ok" or not r.valid or superseded.reason(r, entries):
            continue
        if not models.get(r.model_id).judged_by_quantities:
            continue
        # the data a run saw, not only its preset's name: a preset whose sizes changed is another posterior
        size = " ".join([r.size, *(f"{name}={value}" for name, value in sorted((r.sizes or {}).items()))])
        runs[(r.model_id, size, r.engine)].append(held_out_lpd(r.metrics.posterior_mean, r.metrics.posterior_mcse))
    failed = False
    print(f"{'model':40} {'size':18} {'engine':8} {'runs':>4} {'lpd':>10} {'MCSE':>7} {'runs sd':>8}")
    medians = defaultdict(dict)
    for (model_id, size, engine), values in sorted(runs.items()):
        lpd = statistics.median(v for v, _ in values)
        mcse = statistics.median(e for _, e in values)
        medians[(model_id, size)][engine] = (lpd, mcse)
        spread = statistics.stdev(v for v, _ in values) if len(values) > 1 else float("nan")
        print(f"{model_id:40} {size:18} {engine:8} {len(values):>4} {lpd:>10.3f} {mcse:>7.3f} {spread:>8.3f}")
    for (model_id, size), by_engine in sorted(medians.items()):
        engines = sorted(by_engine)
        for i, a in enumerate(engines):
            for b in engines[i + 1 :]:
                (lpd_a, se_a), (lpd_b, se_b) = by_engine[a], by_engine[b]
                z = abs(lpd_a - lpd_b) / math.hypot(se_a, se_b)
                far = z > args.limit
                failed |= far
                print(
                    f"{model_id} {size}: {a} - {b} = {lpd_a - lpd_b:+.3f}, {z:.2f} combined MCSEs"
                    + (" OVER THE LIMIT" if far else "")
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

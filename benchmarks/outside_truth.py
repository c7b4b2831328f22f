"""How far each engine's posterior means lie from an outside truth (posteriordb's reference draws, inference-gym's
ground truth), in reference sds: the largest |run mean - reference mean| / reference sd over a model's parameters,
per model and engine (median over its completed runs), against a limit (0.1 sd by default).

    .venv/bin/stanjax run --models arma-arma11 dogs-dogs low_dim_gauss_mix-low_dim_gauss_mix sblrc-blr \\
        gp_pois_regr-gp_pois_regr --engines stan numpyro --size default --repeats 2 --out /tmp/outside
    .venv/bin/python benchmarks/outside_truth.py /tmp/outside

Exit 1 when a model with an outside truth is farther than the limit on an engine. Models without one (``dogs-dogs``,
whose posteriordb entry has no reference draws) are listed with the reference the gate used instead.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from stanjax.runner.core import records, superseded
from stanjax.runner.measure import references


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="a results folder (or results.jsonl)")
    parser.add_argument("--limit", type=float, default=0.1, help="reference sds (default: %(default)s)")
    args = parser.parse_args(argv)
    distances = defaultdict(list)
    sources = {}
    entries = superseded.load()
    for r in records.read(args.results):
        if r.status != "ok" or superseded.reason(r, entries):  # a run of a program since rewritten: other names
            continue
        reference, source = references.applicable(r.model_id, r.size, r.config.resize, r.data_hash)
        if reference is None:
            continue
        sources[r.model_id] = source
        distances[(r.model_id, r.engine)].append(
            max(
                abs(r.metrics.posterior_mean[name] - ref["mean"]) / ref["sd"]
                for name, ref in reference["parameters"].items()
            )
        )
    failed = False
    print(f"{'model':40} {'engine':8} {'runs':>4} {'max |mean - ref| / ref sd':>26}  reference")
    for (model_id, engine), values in sorted(distances.items()):
        outside = sources[model_id].startswith(references.OUTSIDE_TRUTH)
        far = outside and float(np.median(values)) > args.limit
        failed |= far
        print(
            f"{model_id:40} {engine:8} {len(values):>4} {float(np.median(values)):>26.3f}  "
            f"{'OVER THE LIMIT ' if far else ''}{sources[model_id][:90]}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

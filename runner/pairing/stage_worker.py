"""Runs one stage of ``stanjax check`` before its runs, in a process of its own:
``python -m stanjax.runner.pairing.stage_worker STAGE REQUEST.json RESULT.json``.

The static and density stages run the user's code: they import the NumPyro file, trace it and evaluate its log
density, and build and sample the Stan program through httpstan. That code may never return, and an endless
``jax.lax.while_loop`` holds the process in XLA's native code, where Python runs no signal handler, so Ctrl-C does
nothing there. :func:`stanjax.runner.pairing.check.in_worker` therefore runs each stage here, in a session of its own
and under ``--timeout``, and kills this process's group when the stage ends, runs out of time or the check is
stopped. If the check dies, this worker ends itself and its group
(:func:`stanjax.runner.measure.worker.die_with_the_parent`).

REQUEST.json holds the stage's input: the check's options for the static stage, and the model, size, seed and
points for the density stage. RESULT.json, written once the stage ends, holds one of ``{"found": ...}`` (what the
stage found, which the check goes on with), ``{"refused": [kind, message]}`` (a UsageError, which the check raises
again: one line, exit 2) or ``{"crashed": traceback}`` (a bug).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
import traceback
from pathlib import Path

from stanjax import models
from stanjax.models import UsageError, argument_names
from stanjax.runner.measure.worker import die_with_the_parent, leave
from stanjax.runner.pairing.check import PATHS, static_stage
from stanjax.runner.pairing.check_result import CheckResult
from stanjax.runner.pairing.density_stage import density_stage
from stanjax.runner.pairing.pair_files import CheckRequest, out_dir, target

TRACEBACK_TAIL = 4000  # characters of a crash's traceback in RESULT.json


def static(asked: dict) -> dict:
    """The pair laid out as a model folder (``pair_files.target``), then the static stage on its data. Returns the
    stage and what the check and its later stages need: the spec's ID, its size preset, the user's two files, the
    model folders to register, the sites NumPyro cannot sample, and the runs' reference."""
    start = time.perf_counter()
    request = CheckRequest(**{**asked, **{name: Path(asked[name]) for name in PATHS if asked[name] is not None}})
    spec, size, ignored, given = target(request)
    result = CheckResult(spec, size, request.seed, out_dir(request, spec.id), given)
    findings, reference = static_stage(request, result, spec.data(size, request.seed), ignored, start)
    return {
        "spec": spec.id,
        "size": size,
        "given": None if given is None else [str(path) for path in given],
        "model_dirs": [str(folder) for folder in models.model_dirs()],
        "stage": result.stages[0],
        "dependent_supports": findings.dependent_supports,
        "reference": reference,
    }


def density(asked: dict) -> dict:
    """The density stage's verdict (ok, line, verdict) on the data its size preset and seed give."""
    spec = models.get(asked["spec"])
    data = spec.density_data(asked["size"], asked["seed"])
    return dataclasses.asdict(density_stage(spec, data, asked["points"], asked["seed"]))


STAGES = {"static": static, "density": density}


def main(argv: list[str]) -> int:
    stage, request_file, result_file = argv[0], Path(argv[1]), Path(argv[2])
    die_with_the_parent(request_file.parent)
    asked = json.loads(request_file.read_text())
    os.chdir(asked.pop("cwd"))  # the check's folder: the user's paths are relative to it, the checkout on sys.path
    words = argument_names() if asked.pop("api_words") else contextlib.nullcontext()
    outcome: dict[str, object]
    try:
        with words:
            outcome = {"found": STAGES[stage](asked)}
    except UsageError as err:  # the input's problem: one line in the check's own process
        outcome = {"refused": [type(err).__name__, str(err)]}
    except Exception:  # a bug: the check shows where
        outcome = {"crashed": traceback.format_exc()[-TRACEBACK_TAIL:]}
    result_file.write_text(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    leave(main(sys.argv[1:]))

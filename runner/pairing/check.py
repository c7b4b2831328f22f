"""Are a Stan program and a NumPyro model the same posterior, and which one samples it faster? The logic of
``stanjax check`` (the verb parses, prints and writes the page) and of the API's ``check``.

Three stages, each run only when the one before passed, so a mistake surfaces at the cheapest stage that can see it:

1. static checks (:mod:`stanjax.runner.measure.static_checks`): data keys, types and shapes, parameter names, shapes and
   constraints, read from the programs, no compile; a problem is a one-line StaticCheckError (exit 2);
2. the density check (:mod:`stanjax.runner.pairing.density_stage`) at the draws of a short Stan run (the posterior's
   region): log densities differ by one constant and gradients agree; where they do not, the parameters that move the
   difference are named; a NumPyro log density finite at none of the points is bad input (exit 2, naming the site);
3. a short run of both CPU engines (bundled Stan, NumPyro; :mod:`stanjax.runner.pairing.run_stage`), each run in a
   worker as ``stanjax run`` runs it and judged by the same validity gates (R-hat, ESS, divergences; a reference
   where one exists), and the two engines agreeing: every parameter's mean and sd within 5 combined MCSEs of the other engine's run (the reference gate,
   the other engine's run as the reference; the runs side by side: :mod:`stanjax.runner.pairing.agreement`).

Three verdicts (:mod:`stanjax.runner.pairing.check_verdicts`), because a user must tell "the port differs" from "NUTS could not
sample this": *same posterior* (density and draws agree), *different posterior* (the density check failed, naming
the parameters), *sampling failed* (the densities agree, but a run failed a gate or the draws disagree; with the
advice a Stan user would expect per failed gate). A pair of files (``MODEL.stan MODEL.py`` with a data file) is
first laid out under ``OUT/model`` as a model folder (the layout ``--model-dir`` reads, its one size preset
``given``) and checked as a model of the zoo is; the runs' records are appended to ``OUT/results.jsonl``.

The user's code never runs in this process before the runs: the static stage (laying the pair out imports the NumPyro
file) and the density stage each run in a stage worker (:mod:`stanjax.runner.pairing.stage_worker`), in a session of
its own, as the runs' workers do. ``--timeout`` is each stage's limit as it is each run's: a stage that runs past it
is killed with its process group and the check ends in one line, exit 2 (a model or log density that never
returns is the input's problem, as a static one is; a large model needs a larger ``--timeout``). Ctrl-C or SIGTERM
kills the stage's group and ends the check with 130 / 143; a check killed outright takes its stage worker with it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from stanjax import jax_models, models
from stanjax.models import ROOT, SizeError, UnknownChoice, UsageError, option
from stanjax.runner.core import environment, folder_lock
from stanjax.runner.measure import references, static_checks
from stanjax.runner.measure.estimates import minutes
from stanjax.runner.measure.jobs import WORKER_PYTHON, _kill_group, _wait
from stanjax.runner.measure.plan import check_seed_and_timeout
from stanjax.runner.measure.stopping import stopped_by
from stanjax.runner.pairing.check_result import CheckResult
from stanjax.runner.pairing.check_verdicts import (
    SAMPLING_FAILED,
)
from stanjax.runner.pairing.pair_files import (
    CheckRequest,
    as_given,
    check_engines,
    out_dir,
    planned,
    reference_file,
)
from stanjax.runner.pairing.run_stage import run_seconds, run_stage, within_budget

STAGES = ("static", "density", "run")
STAGE_WORKER = "stanjax.runner.pairing.stage_worker"  # runs the stages before the runs


# --- the check -----------------------------------------------------------------------------------------------------


def check(
    request: CheckRequest,
    on_stage: Callable[[CheckResult], None] = lambda result: None,
    on_refused: Callable[[str, Path, UsageError], None] = lambda spec_id, out, err: None,
) -> CheckResult:
    """Run the stages of ``request`` in order, stopping at the first that fails (or at ``stop_after``);
    ``on_stage`` is called with the result after each stage (a progress line). Problems with the input are
    UsageErrors before anything runs; so is a static or density stage that runs past ``timeout``; one found once
    the check holds its folder is first given to ``on_refused`` (the posterior's ID, the folder, the error: the
    verb writes its page there). Ctrl-C or SIGTERM in those stages ends their worker and is raised
    (KeyboardInterrupt, ``stopping.Stopped``); in the runs, it is ``result.stopped``."""
    if not 2 <= request.points <= 100:
        raise UsageError(f"{option('points')} must be between 2 and 100, got {request.points}")
    if request.stop_after not in STAGES:
        raise UsageError(f"{option('stop-after')} must be one of {', '.join(STAGES)}, got {request.stop_after!r}")
    check_seed_and_timeout(request.seed, request.timeout)
    if not request.budget > 0:
        raise UsageError(f"{option('budget')} must be a positive number of minutes, got {request.budget}")
    check_engines(request.engines)
    spec_id, _ = planned(request)
    out = out_dir(request, spec_id)
    with folder_lock.held(out, request.wait):  # one writer from the lay-out to the last record
        try:
            return _stages(request, on_stage)
        except UsageError as err:
            on_refused(spec_id, out, err)
            raise


def _stages(request: CheckRequest, on_stage: Callable[[CheckResult], None]) -> CheckResult:
    with stopped_by(signal.SIGTERM):
        began = time.perf_counter()
        static = in_worker("static", _asked(request), request.timeout)
        for folder in static["model_dirs"]:  # the pair's laid-out folder, --model-dir's
            models.add_model_dir(Path(folder))
        spec, files = models.get(static["spec"]), static["given"]
        given = None if files is None else (Path(files[0]), Path(files[1]))
        result = CheckResult(spec, static["size"], request.seed, out_dir(request, spec.id), given)
        result.stages.append({**static["stage"], "seconds": time.perf_counter() - began})
        on_stage(result)
        if request.stop_after == "static":
            return result
        began = time.perf_counter()
        asked = {"spec": spec.id, "size": result.size, "seed": request.seed, "points": request.points}
        found = in_worker("density", asked, request.timeout, lambda text: as_given(text, spec, given))
    line = as_given(found["line"], spec, given)
    built, per_run = found["compile_s"], run_seconds(request, found["iteration_s"])
    notes = [] if built is None else [f"Stan's program compiled here ({built:.1f} s of this stage); the runs load it"]
    runs = request.repeats * len(request.engines)
    if per_run is not None:
        notes.append(
            f"the runs: about {minutes(per_run * runs)} ({runs} runs of about {minutes(per_run)}, estimated from the "
            f"short Stan run's {1e3 * found['iteration_s']:.3g} ms an iteration; {option('budget')} "
            f"{request.budget:g} min)"
        )
    result.stages.append(
        {"name": "density", "ok": found["ok"], "line": line, "notes": notes, "seconds": time.perf_counter() - began}
    )
    on_stage(result)
    if not found["ok"] or request.stop_after == "density":
        result.verdict = found["verdict"]
        return result
    if static["dependent_supports"]:  # the density agrees; NumPyro's sampler cannot run the model as written
        not_sampleable(result, static["dependent_supports"])
    else:
        if per_run is not None:
            within_budget(request, per_run, found["iteration_s"])
        run_stage(request, result, static["reference"], found["iteration_s"])
    if not result.stopped:
        on_stage(result)
    return result


PATHS = ("data", "model_dir", "reference", "out")  # CheckRequest's paths, as text in a stage worker's request


def _asked(request: CheckRequest) -> dict:
    """The request as JSON for the static stage's worker, from a CheckRequest or the CLI's namespace of its names."""
    asked = {entry.name: getattr(request, entry.name) for entry in dataclasses.fields(CheckRequest)}
    return {name: str(value) if name in PATHS and value is not None else value for name, value in asked.items()}


# What a stage did not finish in time; {timeout} the option's name.
TIMED_OUT = {
    "static": "reading the Stan program, importing the NumPyro file and tracing its model on the data did not finish: "
    "a model that never returns (an endless jax.lax.while_loop), or raise {timeout} for a large one",
    "density": "building the Stan program (a first compile takes minutes), its short run and both log densities at "
    "its draws did not finish: a log density that never returns, or raise {timeout} for a large model",
}
REFUSALS = {kind.__name__: kind for kind in (UsageError, static_checks.StaticCheckError, SizeError, UnknownChoice)}
OUTPUT_TAIL = 4000  # characters of a failed worker's output in its error


def in_worker(stage: str, asked: dict, timeout_s: float, named: Callable[[str], str] = str) -> dict:
    """What ``stage`` found, run on ``asked`` in a stage worker (:mod:`stanjax.runner.pairing.stage_worker`) in this
    process's folder, in a session of its own: its process group is killed when it ends, runs past ``timeout_s`` (a
    one-line UsageError) or this process is stopped, and it ends itself if this process dies. The stage's refusal is
    raised here as its UsageError (``named``: its text as the user's files name it); a crash is a RuntimeError with
    the worker's last output."""
    with tempfile.TemporaryDirectory(prefix="stanjax-stage-") as tmp:
        request_file, result_file, log_file = (Path(tmp) / name for name in ("request.json", "result.json", "log"))
        # the stage works in this process's folder (the user's paths), its refusals worded as here (the API's names)
        request_file.write_text(json.dumps({**asked, "cwd": os.getcwd(), "api_words": models.api_words()}))
        with open(log_file, "w") as log:
            proc = subprocess.Popen(  # started in the checkout, as the runs' workers: stanjax imported from it
                [WORKER_PYTHON, "-m", STAGE_WORKER, stage, str(request_file), str(result_file)],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**environment.worker_env(), "JAX_PLATFORMS": "cpu", "STANJAX_CAMPAIGN_PID": str(os.getpid())},
            )
            try:
                _wait(proc, timeout_s)
            except subprocess.TimeoutExpired:
                why = TIMED_OUT[stage].format(timeout=option("timeout"))
                stopped = f"the {stage} stage stopped after {timeout_s:g} s ({option('timeout')}): {why}"
                raise UsageError(named(stopped)) from None
            finally:
                _kill_group(proc)
        if not result_file.exists():
            code = proc.returncode
            how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
            output = log_file.read_text(errors="replace")[-OUTPUT_TAIL:]
            raise RuntimeError(f"the {stage} stage's worker ended ({how}) without a result; its output ends:\n{output}")
        outcome = json.loads(result_file.read_text())
    if "refused" in outcome:
        kind, message = outcome["refused"]
        refusal = REFUSALS.get(kind, UsageError)
        raise refusal.__new__(refusal, named(message))  # its text as the stage worded it: no __init__ again
    if "crashed" in outcome:
        raise RuntimeError(f"the {stage} stage failed:\n{outcome['crashed']}")
    return outcome["found"]


def static_stage(request: CheckRequest, result: CheckResult, data: dict, ignored: list[str], start: float):
    """The static stage (stanc, shapes, data; timed from ``start``): its findings and the reference the runs are
    gated on (``--reference``'s, or the model's own); a problem is a one-line UsageError in the user's own file
    names."""
    spec, given = result.spec, result.given
    try:
        findings = static_checks.require(spec, data, tuple(ignored))  # problems: one line each
        beyond = static_checks.out_of_bounds(jax_models.load(spec.jax_file), data, spec.jax_file)
        if beyond:
            raise static_checks.StaticCheckError(f"{spec.id}: {beyond}")
    except static_checks.StaticCheckError as err:
        raise static_checks.StaticCheckError(as_given(str(err), spec, given)) from None
    if request.reference is not None:  # the laid-out spec's outside truth (pair_files.TRUTH), before any run
        summary = references.from_posteriordb(request.reference, references.element_names(findings.parameters))
        header = {key: summary[key] for key in ("without", "other")}
        header["source"] = f"{summary['source']}: {summary['chains']} chains of {summary['draws']} draws"
        reference_file(spec).write_text(json.dumps({"header": header, "parameters": summary["parameters"]}))
    # the one rule the runs' gates follow: the record and the verdict judge by the same reference
    found, source = references.applicable(spec.id, result.size, None, models.data_hash(data))
    reference = None if found is None else {**found, "source": source}
    shapes = ", ".join(static_checks.shape_text(name, shape) for name, shape in findings.parameters.items())
    notes = (
        [
            f"ignored data key(s) {', '.join(ignored)}: in neither {spec.stan_file.name}'s data block nor "
            f"{spec.model_name}()'s arguments (CmdStan ignores them too)"
        ]
        if ignored
        else []
    ) + findings.notes
    header = reference["header"] if reference is not None else {}
    if header.get("without"):
        notes.append(f"the reference has no draws of {', '.join(header['without'])}: not checked against it")
    if header.get("other"):
        other = header["other"]
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        notes.append(f"the reference's draws of {shown} are of no parameter of the model: left out")
    result.stages.append(
        {
            "name": "static",
            "ok": True,
            "seconds": time.perf_counter() - start,
            "notes": notes,
            "line": f"data {', '.join(data) or 'none'}; parameters {shapes}",
        }
    )
    return findings, reference


def not_sampleable(result: CheckResult, dependent_supports) -> None:
    """The run stage of a pair whose density agrees but whose NumPyro sites NumPyro's MCMC cannot sample."""
    names = ", ".join(f"'{name}'" for name in dependent_supports)
    result.stages.append(
        {
            "name": "run",
            "ok": False,
            "seconds": 0.0,
            "notes": [],
            "line": f"not run: NumPyro's MCMC cannot sample {names} as written",
        }
    )
    result.advice = [
        f"NumPyro: {names}: a support whose bounds are computed from another parameter; NumPyro's "
        "MCMC maps such a site's draws back through the wrong transform (or fails with an "
        "UnexpectedTracerError on parallel chains), so no run would compare the samplers. Write "
        "it in both programs as a unit-interval (or positive) parameter that the bound scales, "
        "with the log Jacobian of that scaling (Stan: target += log1m(alpha1) for "
        "beta1 = (1 - alpha1) * share)"
    ]
    result.verdict = SAMPLING_FAILED

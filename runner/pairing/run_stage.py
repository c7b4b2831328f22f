"""The run stage of ``stanjax check`` (:mod:`stanjax.runner.pairing.check`): both engines' runs through the campaign's
workers, estimated before they start from the density stage's short Stan run and refused past ``--budget``; judged
by the validity gates (an engine's R-hat on its runs' chains pooled where it failed R-hat alone), grown in draws,
then in repeats, where more of them could decide what failed, then set side by side (:mod:`stanjax.runner.pairing.agreement`).
"""

from __future__ import annotations

import math
import os
import time

from stanjax.models import UsageError, option
from stanjax.runner.core.records import RunRecord
from stanjax.runner.measure.estimates import START_S, minutes
from stanjax.runner.measure.jobs import draws_file, run_jobs
from stanjax.runner.measure.plan import Request, plan
from stanjax.runner.measure.validity import RHAT_MAX
from stanjax.runner.pairing.agreement import (
    agreement,
    engine_rows,
    funnel,
    parameter_rows,
    pooled_rhat,
    speed_ratio,
)
from stanjax.runner.pairing.check_result import CheckResult
from stanjax.runner.pairing.check_verdicts import (
    ENGINE_NAMES,
    FUNNEL,
    SAME,
    nutpie_notes,
    pooled_notes,
    pooling,
    run_verdict,
)
from stanjax.runner.pairing.pair_files import PAIR, CheckRequest
from stanjax.runner.pairing.speed_advice import nutpie_split, speed_advice


def chain_rounds(request: CheckRequest) -> int:
    """How many rounds a run's chains take on this machine's cores (4 chains on 2 cores: 2)."""
    return math.ceil(request.chains / len(os.sched_getaffinity(0)))


def run_seconds(request: CheckRequest, iteration_s: float | None, draws: int | None = None) -> float | None:
    """A run's seconds as the density stage's short Stan run predicts them: its seconds an iteration of one chain x
    a run's iterations (at ``draws`` a chain, default the request's) x the rounds its chains take on this
    machine's cores, plus a worker's start (NumPyro's runs taken as Stan's: an estimate); None where the stage did
    not time one."""
    if iteration_s is None:
        return None
    return iteration_s * (request.warmup + (draws or request.draws)) * chain_rounds(request) + START_S


def within_budget(request: CheckRequest, per_run: float, iteration_s: float) -> None:
    """Refuse (one line, exit 2) runs estimated past ``--timeout`` each or past ``--budget`` in all, before they
    start: with what would fit."""
    runs = request.repeats * len(request.engines)
    if per_run > request.timeout:
        raise UsageError(
            f"each run would take about {minutes(per_run)} (estimated from the density stage's short Stan run), "
            f"past {option('timeout')} {request.timeout:g} s: raise it, or run fewer {option('warmup')} and "
            f"{option('draws')} iterations"
        )
    if per_run * runs <= 60 * request.budget:
        return
    engines = len(request.engines)
    rounds = chain_rounds(request)
    draws = int((60 * request.budget / engines - START_S) / (iteration_s * rounds) - request.warmup) // 100 * 100
    offer = (
        f"{option('repeats', 1)} takes about {minutes(per_run * engines)}"
        if per_run * engines <= 60 * request.budget
        else f"{option('repeats', 1)} {option('draws', draws)} fits it"
        if draws >= 100
        else f"not even {option('repeats', 1)} fits it"
    )
    raise UsageError(
        f"the runs would take about {minutes(per_run * runs)} ({runs} runs of about {minutes(per_run)}, estimated "
        f"from the density stage's short Stan run), over {option('budget')} {request.budget:g} min: {offer}; or "
        f"{option('budget', math.ceil(per_run * runs / 60))} to run them as asked"
    )


GROW_MAX = 4  # a check's draws grow, doubling, to at most this many times --draws
REPEATS_MAX = 2  # then, where R-hat alone is undecided on pooled runs, the repeats grow to this many times --repeats
GROWABLE = {"ess", "rhat"}  # gates more draws can decide; the engines' disagreement too


def run_stage(request: CheckRequest, result: CheckResult, reference: dict | None, iteration_s: float | None) -> None:
    """Both engines' runs through the campaign's workers, then the verdict, the parameter rows and the speed;
    where the runs failed only gates more draws decide (ESS, R-hat, the engines' agreement), they run again with
    twice the draws, to ``GROW_MAX`` times ``--draws``, then with more repeats where R-hat alone stays undecided
    on pooled runs (``next_round``), within ``--budget`` (``iteration_s``: the density stage's estimate), the last
    round's runs judged. ``result.stopped`` set by Ctrl-C (the records written are
    kept)."""
    began = time.perf_counter()
    spec, given = result.spec, result.given
    names = [p.name for p in spec.parameters]
    engines = ", ".join("bundled Stan" if name == "stan" else ENGINE_NAMES[name] for name in request.engines)
    draws, repeats, grown = request.draws, request.repeats, [request.draws]
    written: list[RunRecord] = []
    while True:
        result.settings = (
            f"{request.chains} chains x ({request.warmup} warmup + {draws} draws), "
            f"{repeats} repeat{'s' if repeats > 1 else ''} per engine, {engines} on the CPU"
        )
        done = {r.repeat for r in written if r.config.draws == draws}  # a round of more repeats adds to them
        new = run_round(request, result, draws, repeats, len(done))
        if new is None:  # stopped: the rows of what finished, no verdict
            result.rows, result.parameters = engine_rows(result.records), parameter_rows(result.records, reference)
            return
        written = (written if done else []) + new
        pair = [r for r in written if r.engine in PAIR]
        files = {(job.engine, job.repeat): draws_file(result.out / "draws", job) for job in result.jobs}
        pooled = {
            engine: pooled_rhat([files[r.engine, r.repeat] for r in pair if r.engine == engine], names)
            for engine in pooling(pair)
        }
        result.pairs = agreement(pair)
        diverging = [files[r.engine, r.repeat] for r in pair if "divergences" in (r.failed_gates or [])]
        crowded = funnel(diverging, names) if diverging else None
        seen = {"divergences": FUNNEL.format(**crowded)} if crowded else {}
        result.verdict, result.advice = run_verdict(pair, result.pairs, reference, pooled, seen)
        step = None if result.verdict == SAME else next_round(request, draws, repeats, pair, pooled)
        if step is None:
            break
        ahead = run_seconds(request, iteration_s, step[0])
        runs = len(request.engines) * (step[1] if step[0] > draws else step[1] - repeats)  # new draws: every run
        if ahead is None or time.perf_counter() - began + ahead * runs > 60 * request.budget:
            break
        draws, repeats = step
        if draws > grown[-1]:
            grown.append(draws)
    result.rows = engine_rows(written)
    result.advice += nutpie_notes(written)
    notes = [] if (len(grown), repeats) == (1, request.repeats) else [grown_note(grown, repeats, request)]
    result.stages.append(
        {
            "name": "run",
            "ok": result.verdict == SAME,
            "notes": notes + pooled_notes(pair, pooled) + depth_notes(written),
            "seconds": time.perf_counter() - began,
            "line": result.settings,
        }
    )
    result.parameters = parameter_rows(written, reference)
    result.speed = speed_ratio(written)
    shown_as = given[0] if given else spec.stan_file.name
    result.speed_advice = speed_advice(result.rows, spec.stan_file, shown_as, result.speed)
    result.speed_advice += nutpie_split(written)


def run_round(
    request: CheckRequest, result: CheckResult, draws: int, repeats: int, first: int = 0
) -> list[RunRecord] | None:
    """One round of both engines' runs at ``draws`` a chain, repeats ``first`` to ``repeats`` (those before it ran in
    the round before), each run's draws kept in ``OUT/draws``: its records (``result.records`` holds every round's);
    None where Ctrl-C or SIGTERM stopped it (``result.stopped``)."""
    result.jobs = plan(
        Request(
            suite="tiny",
            models=[result.spec.id],
            engines=list(request.engines),
            stan="bundled",
            size=result.size,
            chains=request.chains,
            warmup=request.warmup,
            draws=draws,
            repeats=repeats,
            seed=request.seed,
            timeout=request.timeout,
        )
    )
    kept = result.out / "draws"  # each run's draws: R-hat may judge an engine's runs together
    kept.mkdir(parents=True, exist_ok=True)
    before = len(result.records)
    try:
        todo = [job for job in result.jobs if job.repeat >= first]
        run_jobs(todo, result.out, request.timeout, result.records, draws_dir=kept)
    except KeyboardInterrupt as stop:
        result.stopped = stop
        return None
    return result.records[before:]


def next_round(
    request: CheckRequest, draws: int, repeats: int, pair: list[RunRecord], pooled: dict[str, float]
) -> tuple[int, int] | None:
    """The draws and repeats of the round after one that decided nothing, or None where more cannot decide it:
    twice the draws, to ``GROW_MAX`` x ``--draws``; then, where only R-hat failed, on engines judged on their runs
    pooled, ``REPEATS_MAX`` x ``--repeats`` (more chains pooled: a run's ESS or the engines' agreement, per repeat,
    no more repeats decide)."""
    if not growable(pair, pooled):
        return None
    if 2 * draws <= GROW_MAX * request.draws:
        return 2 * draws, repeats
    undecided = {engine for engine, value in pooled.items() if value > RHAT_MAX}
    others_passed = not any(r.failed_gates for r in pair if r.engine not in undecided)
    if undecided and others_passed and repeats < REPEATS_MAX * request.repeats:
        return draws, REPEATS_MAX * request.repeats
    return None


def growable(pair: list[RunRecord], pooled: dict[str, float]) -> bool:
    """Whether more draws could decide what failed: every run completed and failed no gate but ESS and R-hat (R-hat
    passed on an engine's pooled runs aside); the engines' disagreement with every gate passed too."""
    decided = {engine for engine, value in pooled.items() if value <= RHAT_MAX}
    failed = {gate for r in pair for gate in r.failed_gates or [] if not (gate == "rhat" and r.engine in decided)}
    return all(r.status == "ok" for r in pair) and failed <= GROWABLE


def grown_note(grown: list[int], repeats: int, request: CheckRequest) -> str:
    steps = " → ".join(f"{draws:,}" for draws in grown)
    more = f", then repeats {request.repeats} → {repeats}" if repeats > request.repeats else ""
    return (
        f"draws a chain grown {steps}{more}: ESS, R-hat or the engines' agreement were not yet decided (at most "
        f"{GROW_MAX} x {option('draws')} {request.draws:,}; then, where R-hat alone failed on an engine's pooled "
        f"runs, {REPEATS_MAX} x {option('repeats')}; within {option('budget')}); the last round judged, every "
        "round recorded"
    )


def depth_notes(runs: list[RunRecord]) -> list[str]:
    """A note per engine whose trees averaged at least half the most leapfrog steps its tree depth allows: NUTS
    near its limit samples slowly and, at it, stops short of a U-turn (a geometry to reparameterise; a limit an
    expert raises only knowingly)."""
    deepest: dict[str, tuple[float, int]] = {}
    for run in runs:
        if run.status == "ok" and run.metrics is not None:
            steps, limit = run.metrics.mean_leapfrog_per_draw, 2**run.config.max_treedepth - 1
            if steps >= (limit + 1) / 2 and steps > deepest.get(run.label, (0.0, 0))[0]:
                deepest[run.label] = (steps, limit)
    return [
        f"{label}: trees of {steps:,.0f} leapfrog steps a draw on average, of at most {limit:,} (max tree depth "
        f"{limit.bit_length()}): near NUTS's limit, where it samples slowly and stops before a U-turn; a "
        "reparameterisation (non-centred, rescaled) usually helps more than a deeper limit"
        for label, (steps, limit) in deepest.items()
    ]

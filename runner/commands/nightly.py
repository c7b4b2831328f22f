"""``stanjax nightly``: run the nightly suite into the history store, compare it with this machine's previous
nightly (or a named baseline), write the report with the comparison and history plots, exit 1 on regression."""

from __future__ import annotations

from pathlib import Path

from stanjax.runner.campaigns import regressions
from stanjax.runner.commands.compare import check_rule, find_regressions
from stanjax.runner.commands.run import calibrate, check_min_sampler_seconds
from stanjax.runner.core import folder_lock, history, records
from stanjax.runner.core.config import Job
from stanjax.runner.measure import run_length
from stanjax.runner.measure.jobs import job_core_ids, new_campaign_id, run_jobs
from stanjax.runner.measure.plan import Request, plan
from stanjax.runner.measure.stopping import interrupted
from stanjax.runner.measure.suites import SUITES


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "nightly",
        help="run the nightly suite, compare with the previous nightly, report, flag regressions",
        description="Runs the `nightly` suite into HISTORY/<machine>/nightly-<UTC time>/, compares it with the "
        "latest earlier nightly of the same machine (or --baseline) as `stanjax compare` does, and writes the "
        "report (with the comparison and a history plot per model) to that folder's report/. Exit 1 when "
        "anything regressed or a run failed, 0 otherwise, 2 on bad input.",
    )
    parser.add_argument("--history", type=Path, default=Path("results"), help="history store (default: %(default)s)")
    parser.add_argument("--baseline", type=Path, help="records to compare with (default: the previous nightly)")
    parser.add_argument("--models", nargs="+", metavar="ID", help="posterior IDs (default: the suite's)")
    parser.add_argument("--size", help="size preset (default: the suite's; CI uses tiny)")
    parser.add_argument("--repeats", type=int, help="repeats per (model, engine) (default: the suite's, 5)")
    parser.add_argument(
        "--threshold",
        type=float,
        default=regressions.THRESHOLD,
        help="relative change that counts (default: %(default)s)",
    )
    parser.add_argument(
        "--alpha", type=float, default=regressions.ALPHA, help="significance level (default: %(default)s)"
    )
    parser.add_argument(
        "--min-sampler-seconds",
        type=float,
        default=SUITES["nightly"]["min_sampler_s"],
        metavar="S",
        help="where a pairing's shorter side sampled for less than S (this machine's earlier runs), both sides "
        "draw more, the same number, until it would not; 0: never (default: %(default)s)",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before one run is stopped")
    parser.set_defaults(handler=main)


def main(args) -> int:
    check_rule(args.threshold, args.alpha)  # bad input fails before an hour of runs, not after
    check_min_sampler_seconds(args.min_sampler_seconds)
    folder_lock.check(args.history)
    request = Request(suite="nightly", models=args.models, size=args.size, repeats=args.repeats, timeout=args.timeout)
    jobs = plan(request)
    if args.baseline is not None and not args.baseline.exists():
        raise records.RecordsError(f"no results at {args.baseline}")
    folder = history.new_folder(args.history)
    with folder_lock.held(folder):  # one writer: a run into it meanwhile is refused, naming the nightly
        return run_nightly(args, request, jobs, folder)


def run_nightly(args, request: Request, jobs: list[Job], folder: Path) -> int:
    """The nightly's runs into ``folder`` (its lock held), compared and reported; exit 1 on a regression or a
    failed run."""
    from stanjax.reports.build import build

    # Runs long enough to measure, with the draws of the nightly before where it ran the pairing (the same keys).
    if args.min_sampler_seconds > 0:
        jobs, lines = run_length.for_campaign(jobs, args.min_sampler_seconds, history.previous(folder))
        for line in lines:
            print(line)
    campaign_id = new_campaign_id()
    print(calibrate(folder, campaign_id, job_core_ids(jobs[0])))
    written: list[records.RunRecord] = []
    try:
        run_jobs(
            jobs,
            folder,
            args.timeout,
            written,
            reruns=request.reruns,
            quiet_wait_s=request.quiet_wait,
            campaign_id=campaign_id,
        )
    except KeyboardInterrupt as stop:
        return interrupted(stop, written, jobs, folder)
    baseline = args.baseline or history.previous(folder)
    comparison = None
    if baseline is None:
        print(f"no baseline: this is the first nightly of {folder.parent.name} in {args.history}")
    else:
        comparison = find_regressions(baseline, folder, folder, args.threshold, args.alpha)
    index = build(folder, folder / "report", nightly=comparison, history=records.read(folder.parent))
    print(f"report: {index}")
    failed = [r for r in written if r.status != "ok"]
    return 1 if failed or (comparison and comparison["regressed"]) else 0

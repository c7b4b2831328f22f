"""What a campaign folder already holds, for ``--resume``: the campaign to go on with, where the plan covers its
blocks, and the runs it has done."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NamedTuple

from stanjax.models import UsageError
from stanjax.runner.core import environment, records, superseded
from stanjax.runner.core.config import Job, RunKey
from stanjax.runner.measure.jobs import new_campaign_id


class Campaign(NamedTuple):
    """A campaign to go on with: its ID, and the entropy its sampler seeds came from (``Job.entropy``)."""

    id: str
    entropy: int


def resume(out: Path, jobs: list[Job], clean: bool) -> tuple[list[Job], str | None, str]:
    """``--resume``: the jobs left to run, under the campaign they go on with, and the line that says so. The jobs
    take the campaign's entropy, so that a block's new runs share its earlier runs' sampler seed. Where ``out``'s
    newest campaign cannot go on, every job under a new campaign's ID, and why; with no campaign in ``out``, every
    job and None (the runs start one)."""
    campaign, differs = campaign_to_resume(out, jobs)
    if differs:
        new = new_campaign_id()
        return jobs, new, f"resume: {differs}: starting a new campaign, {new}, of all {len(jobs)} runs"
    if campaign:
        jobs = [replace(job, entropy=campaign.entropy) for job in jobs]
    done = done_keys(out, clean=clean, campaign_id=campaign.id if campaign else None)
    left = [job for job in jobs if job.key() not in done]
    cleanly = " (clean: a loaded one is run again)" if clean else ""
    said = f"resume: {len(jobs) - len(left)} of {len(jobs)} runs already recorded{cleanly}, {len(left)} to run"
    return left, campaign.id if campaign else None, said


def done_keys(out: Path, clean: bool = False, campaign_id: str | None = None) -> set[RunKey]:
    """The runs ``out`` already holds an ok record of (``--resume`` skips them), of ``campaign_id``'s runs only
    where given (a block pairs runs of one campaign), less any a known bug superseded (results/SUPERSEDED: they are
    measured again); with ``clean``, only those measured on a quiet machine: a loaded run is done again, as a
    campaign with reruns does at once."""
    if not (out / records.RESULTS_FILE).exists():
        return set()
    entries = superseded.load()
    return records.done(
        [
            r
            for r in records.read(out / records.RESULTS_FILE, summaries=False)
            if (r.clean or not clean) and campaign_id in (None, r.campaign_id) and not superseded.reason(r, entries)
        ]
    )


def campaign_to_resume(out: Path, jobs: list[Job]) -> tuple[Campaign | None, str]:
    """The campaign ``--resume`` goes on with, and "": the newest record's in ``out``, where every block it recorded
    is one of ``jobs``' (the same models, settings, data seed and repeats, or more of them) and its records name
    the one entropy of their sampler seeds; else None and how the plans differ (runs of another plan under its ID
    would read as one campaign's), or that its records name no entropy (made before they did: a new run could not
    share its block's seed). The engine setups may differ: one campaign may be run a side at a time (the Stan front
    ends, docs/method.md). None and "" for an ``out`` without records. A campaign of another machine is a
    UsageError: a block pairs runs of one machine."""
    if not (out / records.RESULTS_FILE).exists():
        return None, ""
    runs = records.read(out / records.RESULTS_FILE, summaries=False)
    if not runs:
        return None, ""
    # the last of the newest: ``created`` is in whole seconds, and a file's records are in the order they were made
    newest, here = max(reversed(runs), key=lambda r: r.created), environment.machine()
    if not environment.same_machine(newest.provenance.machine, here):
        raise UsageError(
            f"--resume: {out} is a campaign of {newest.machine} and this machine is {here.label}: resume it "
            f"on {newest.machine}, or start this machine's own (--out results/{here.slug}/...)"
        )
    recorded = [r for r in runs if r.campaign_id == newest.campaign_id]
    if not {campaign_block(r) for r in recorded} <= {campaign_block(job) for job in jobs}:
        theirs, ours = plan_differences(recorded, jobs)
        return None, f"the newest campaign in {out} ({newest.campaign_id}) ran {theirs}; this plan has {ours}"
    entropies = {r.entropy for r in recorded}
    entropy = entropies.pop() if len(entropies) == 1 else None
    if entropy is None:
        return None, (
            f"the newest campaign in {out} ({newest.campaign_id}) does not record the entropy of its sampler seeds "
            "(made before its records did), so no new run could share its block's seed"
        )
    return Campaign(newest.campaign_id, entropy), ""


def campaign_block(run: records.RunRecord | Job) -> tuple[str, str, int]:
    """What a run's block is of within a campaign: the model, the settings (with the data seed) and the repeat."""
    return run.model_id, run.key().config_hash, run.repeat


def plan_differences(recorded: list[records.RunRecord], jobs: list[Job]) -> tuple[str, str]:
    """What the recorded blocks have that ``jobs``' do not, as "seed 1, repeats 5" for each side, in the options'
    terms (models, repeats, the settings); what no single option explains, as a count of runs."""

    def aspects(run: records.RunRecord | Job) -> dict[str, Any]:
        return {"models": run.model_id, "repeats": run.repeat, **asdict(run.config)}

    def shown(name: str, values: set) -> str:
        if name == "repeats":
            return f"repeats {max(values, default=-1) + 1}"
        listed = sorted(map(str, values))
        more = f" (+{len(listed) - 3} more)" if len(listed) > 3 else ""
        return f"{name} {', '.join(listed[:3]) or 'none'}{more}"

    names = aspects(recorded[0])
    theirs, ours = ({name: {aspects(run)[name] for run in side} for name in names} for side in (recorded, jobs))
    differing = [name for name in theirs if not theirs[name] <= ours[name]]
    if not differing:
        planned = {campaign_block(job) for job in jobs}
        unplanned = sum(campaign_block(r) not in planned for r in recorded)
        return f"{unplanned} run(s) of blocks not in this plan", "other combinations of models, settings and repeats"
    ran, has = (", ".join(shown(name, side[name]) for name in differing) for side in (theirs, ours))
    return ran, has

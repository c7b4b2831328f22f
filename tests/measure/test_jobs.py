"""The campaign's view of the machine: a run measured beside other work is flagged, never passed silently."""

import subprocess
import time

import pytest

from stanjax.runner.core import records
from stanjax.runner.measure import jobs
from stanjax.runner.measure.jobs import LOADED_SHARE, load_sample, machine_load


def test_load_is_the_other_processes_busy_cores_and_flags_a_loaded_machine():
    quiet = machine_load(
        {"busy_s": 100.0, "cores": 2, "ours_s": 10.0, "load_average": 0.1},
        {"busy_s": 110.02, "cores": 2, "ours_s": 20.0, "load_average": 1.0},
        wall_s=10.0,
    )
    assert quiet["other_processes_cores"] == pytest.approx(0.002) and not quiet["loaded"]
    busy = machine_load(
        {"busy_s": 100.0, "cores": 2, "ours_s": 10.0, "load_average": 0.1},
        {"busy_s": 125.0, "cores": 2, "ours_s": 20.0, "load_average": 2.0},
        wall_s=10.0,
    )
    assert busy["other_processes_cores"] == pytest.approx(1.5) and busy["loaded"] and busy["load_average_end"] == 2.0
    assert busy["other_processes_share"] == pytest.approx(0.75) and busy["cores_measured"] == 2
    unknown = machine_load(
        {"busy_s": None, "cores": None, "ours_s": 0.0, "load_average": 0.0},
        {"busy_s": None, "cores": None, "ours_s": 1.0, "load_average": 0.0},
        wall_s=1.0,
    )
    assert unknown["other_processes_cores"] is None and not unknown["loaded"]  # missing, never zero


@pytest.mark.parametrize("cores, loaded", [(2, True), (14, False)])
def test_load_is_judged_against_the_cores_a_run_was_measured_on(cores, loaded):
    """0.2 cores of other work slowed two committed 2-core runs by ~20 % under a fixed 0.25-core threshold: it is
    a tenth of a 2-core run's cores (flagged), and 1.4 % of a 14-core lane's (not)."""
    load = machine_load(
        {"busy_s": 100.0, "cores": cores, "ours_s": 10.0, "load_average": 0.1},
        {"busy_s": 112.0, "cores": cores, "ours_s": 20.0, "load_average": 0.3},
        wall_s=10.0,
    )
    assert load["other_processes_cores"] == pytest.approx(0.2) and load["loaded"] is loaded


def test_a_busy_process_that_is_not_ours_is_seen():
    before = load_sample()
    # A busy loop detached from this process (its parent shell exits at once): its CPU time is not ours.
    subprocess.run(["sh", "-c", "timeout 1.5 sh -c 'while :; do :; done' >/dev/null 2>&1 &"], check=True)
    time.sleep(1.6)
    load = machine_load(before, load_sample(), wall_s=1.6)
    assert load["other_processes_share"] > LOADED_SHARE and load["loaded"]
    assert before["cores"] == len([c for c in open("/proc/stat").read().split() if c[:3] == "cpu" and c[3:].isdigit()])


def _outcome(loaded: bool) -> dict:
    """A worker's part of a record, measured beside other work or not."""
    busy = 1.2 if loaded else 0.01
    return {
        "status": "ok",
        "wall_s": 1.0,
        "valid": True,
        "failed_gates": [],
        "gates": {},
        "load": {
            "other_processes_cores": busy,
            "load_average_start": 0.0,
            "load_average_end": 0.0,
            "loaded": busy > 0.1,
        },
    }


def test_a_loaded_run_is_run_again_in_its_block_and_its_loaded_record_is_kept_marked(tmp_path, monkeypatch):
    """A planted load on the first Stan run: that run is rerun (after waiting for quiet), its block stays whole
    with a clean run of each side, the loaded record stays in the file, marked, and the summary says so."""
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.commands.run import campaign_summary
    from stanjax.runner.measure.plan import plan

    planned = plan(
        build_parser().parse_args(
            [
                "run",
                "--suite",
                "tiny",
                "--models",
                "eight_schools-eight_schools_noncentered",
                "--engines",
                "stan",
                "numpyro",
                "--repeats",
                "2",
            ]
        )
    )
    planted = iter([True])  # the first attempt of the first run is loaded; every other one is clean
    waited = []
    monkeypatch.setattr(
        jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(next(planted, False))
    )
    monkeypatch.setattr(jobs, "wait_for_quiet", lambda core_ids, max_wait_s, say: waited.append(max_wait_s))
    written = []
    rerun = jobs.run_jobs(planned, tmp_path, 60, written, reruns=2, quiet_wait_s=30)
    on_disk = records.read(tmp_path / records.RESULTS_FILE)
    assert [(r.block, r.engine, r.clean) for r in on_disk] == [
        (0, "stan", False),
        (0, "stan", True),
        (0, "numpyro", True),
        (1, "numpyro", True),
        (1, "stan", True),
    ]
    assert on_disk[0].load.loaded and on_disk[0].key() == on_disk[1].key()  # the same run, measured again
    assert waited == [30, 30]  # once before the campaign, once before the rerun
    assert len(rerun) == 1 and "1.20 cores busy" in rerun[0]
    summary = campaign_summary(written, rerun, tmp_path)
    assert summary.startswith("4 of 4 runs ok") and "1 run(s) rerun after a loaded measurement" in summary
    assert "still loaded" not in summary


def test_a_run_loaded_on_every_try_stops_after_its_reruns_and_is_said_to_be_incomplete(tmp_path, monkeypatch):
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.commands.run import campaign_summary
    from stanjax.runner.measure.plan import plan

    planned = plan(
        build_parser().parse_args(
            ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--engines", "stan"]
        )
    )
    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(True))
    monkeypatch.setattr(jobs, "wait_for_quiet", lambda core_ids, max_wait_s, say: None)
    written = []
    rerun = jobs.run_jobs(planned, tmp_path, 60, written, reruns=2)
    assert len(written) == 3 and all(not r.clean for r in written) and len(rerun) == 2
    assert "1 run(s) still loaded after their reruns" in campaign_summary(written, rerun, tmp_path)
    from stanjax.runner.measure.resume import done_keys

    assert done_keys(tmp_path) == {planned[0].key()}  # --reruns 0: an ok record is done, loaded or not
    assert done_keys(tmp_path, clean=True) == set()  # with reruns, --resume measures it again


def test_resume_measures_again_a_run_that_a_known_bug_superseded(tmp_path, monkeypatch):
    """A record results/SUPERSEDED covers is not done (here the committed rule for a Stan run naming no ISA): a
    campaign grown with --resume across a fix measures it again; its clean partner stays done."""
    from msgspec.structs import replace

    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.measure.plan import plan
    from stanjax.runner.measure.resume import done_keys

    planned = plan(
        build_parser().parse_args(
            [
                "run",
                "--suite",
                "tiny",
                "--models",
                "eight_schools-eight_schools_noncentered",
                "--engines",
                "stan",
                "numpyro",
            ]
        )
    )
    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(False))
    monkeypatch.setattr(jobs, "wait_for_quiet", lambda core_ids, max_wait_s, say: None)
    jobs.run_jobs(planned, tmp_path, 60, [], reruns=2)
    made = records.read(tmp_path / records.RESULTS_FILE)
    assert done_keys(tmp_path, clean=True) == {j.key() for j in planned}
    older = tmp_path / "older"
    older.mkdir()
    for r in made:
        records.append(older / records.RESULTS_FILE, replace(r, isa="") if r.engine == "stan" else r)
    assert done_keys(older, clean=True) == {j.key() for j in planned if j.engine == "numpyro"}
    assert done_keys(older) == {j.key() for j in planned if j.engine == "numpyro"}  # with --reruns 0 as well


def test_resume_refuses_a_campaign_another_machine_made(tmp_path, monkeypatch, capsys):
    """A campaign's blocks are of one machine: --resume of another machine's campaign folder is one line and exit 2
    before anything runs (issue 39: a session on an AMD EPYC went on with a Xeon's campaign)."""
    from msgspec.structs import replace

    from stanjax.runner.commands.cli import build_parser, main
    from stanjax.runner.measure.plan import plan

    planned = plan(
        build_parser().parse_args(
            ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--engines", "stan"]
        )
    )
    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(False))
    monkeypatch.setattr(jobs, "wait_for_quiet", lambda core_ids, max_wait_s, say: None)
    jobs.run_jobs(planned[:1], tmp_path / "here", 60, [], reruns=0)
    made = records.read(tmp_path / "here" / records.RESULTS_FILE)
    machine = made[0].provenance.machine
    elsewhere = replace(made[0], provenance=replace(made[0].provenance, machine=replace(machine, cpu="AMD EPYC 9999")))
    assert elsewhere.machine != made[0].machine
    records.append(tmp_path / "there" / records.RESULTS_FILE, elsewhere)
    argv = ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--resume"]
    monkeypatch.setattr(jobs, "run_one", lambda *args: pytest.fail("ran on another machine's campaign"))
    assert main([*argv, "--out", str(tmp_path / "there")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"is a campaign of {elsewhere.machine} and this machine is {made[0].machine}" in err
    assert main([*argv, "--out", str(tmp_path / "there"), "--estimate"]) == 2  # no estimate for the wrong machine


def test_resume_goes_on_with_the_newest_campaign_only_where_the_plan_covers_it(tmp_path, monkeypatch, capsys):
    """--resume of a campaign grown by a repeat and an engine goes on under its ID and runs only what it lacks; a
    plan with another seed (the full disk's resume stamped its runs with an unrelated campaign's ID), fewer repeats
    or other settings starts a new campaign of the whole plan and says why in one line."""
    from stanjax.runner.commands.cli import main

    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(False))
    out = tmp_path / "results"
    argv = ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--out", str(out)]

    def resume(*options):
        capsys.readouterr()
        before = len(records.read(out))
        assert main([*argv, *options, "--resume"]) == 0
        [said] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("resume:")]
        new = records.read(out)[before:]
        return said, {r.campaign_id for r in new}, len(new)

    assert main([*argv, "--engines", "stan", "--repeats", "2"]) == 0
    [first] = {r.campaign_id for r in records.read(out)}
    grown = ("--engines", "stan", "numpyro", "--repeats", "3")
    assert resume(*grown) == ("resume: 2 of 6 runs already recorded, 4 to run", {first}, 4)
    said, [second], ran = resume(*grown, "--seed", "2")
    assert said == (
        f"resume: the newest campaign in {out} ({first}) ran seed 1; this plan has seed 2: "
        f"starting a new campaign, {second}, of all 6 runs"
    )
    assert second != first and ran == 6
    assert resume(*grown, "--seed", "2") == ("resume: 6 of 6 runs already recorded, 0 to run", set(), 0)
    said, [third], ran = resume("--repeats", "2", "--seed", "2")
    assert said.endswith(
        f"({second}) ran repeats 3; this plan has repeats 2: starting a new campaign, {third}, of all 4 runs"
    )
    said = resume("--repeats", "2", "--seed", "2", "--chains", "2")[0]
    assert f"({third}) ran chains 4; this plan has chains 2: starting a new campaign" in said


def test_a_plan_that_differs_from_the_campaign_in_no_single_option_is_said_as_a_count(tmp_path, monkeypatch):
    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.measure.plan import plan
    from stanjax.runner.measure.resume import campaign_to_resume

    models = "eight_schools-eight_schools_noncentered,covtype_synth-logistic_regression"
    argv = ["run", "--suite", "tiny", "--models", models, "--engines", "stan", "--repeats", "2"]
    eight0, eight1, covtype0, covtype1 = plan(build_parser().parse_args(argv))
    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(False))
    jobs.run_jobs([eight1, covtype0], tmp_path, 60, [])
    [made] = {r.campaign_id for r in records.read(tmp_path)}
    assert campaign_to_resume(tmp_path, [eight0, eight1, covtype0, covtype1]) == ((made, eight0.entropy), "")
    assert campaign_to_resume(tmp_path, [eight0, covtype1]) == (
        None,
        f"the newest campaign in {tmp_path} ({made}) ran 2 run(s) of blocks not in this plan; this plan has other "
        "combinations of models, settings and repeats",
    )


def test_the_wait_for_quiet_returns_once_the_machine_is_quiet_and_gives_up_at_its_limit(monkeypatch):
    said = []
    busy = iter([0.75, 0.5, 0.05])
    monkeypatch.setattr(jobs, "busy_elsewhere", lambda core_ids: next(busy))
    assert jobs.wait_for_quiet(None, 60, said.append) == 0.05 and len(said) == 1
    monkeypatch.setattr(jobs, "busy_elsewhere", lambda core_ids: 0.75)
    assert jobs.wait_for_quiet(None, 0, said.append) == 0.75  # no time left: runs anyway, flagged if loaded


def test_a_resumed_campaign_seeds_its_new_runs_as_its_blocks_were_seeded(tmp_path, monkeypatch):
    """kill -9 mid-block, then --resume: the resumed plan draws fresh entropy, so block 0's NumPyro run had
    another seed than its Stan run (794735250 and 241274827; uninterrupted, both 450362662). The resumed jobs take
    the campaign's recorded entropy; a campaign whose records name none (made before they did) starts anew."""
    from msgspec.structs import replace

    from stanjax.runner.commands.cli import build_parser
    from stanjax.runner.measure.plan import plan
    from stanjax.runner.measure.resume import resume

    argv = ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--repeats", "2"]
    first = plan(build_parser().parse_args([*argv, "--engines", "stan", "numpyro"]))
    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(False))
    jobs.run_jobs(first[:1], tmp_path, 60, [])  # block 0's Stan run, then the campaign was killed
    [made] = records.read(tmp_path)
    again = plan(build_parser().parse_args([*argv, "--engines", "stan", "numpyro"]))
    assert again[1].sampler_seed != made.sampler_seed  # what the resumed run had been seeded with
    left, campaign_id, said = resume(tmp_path, again, clean=False)
    assert campaign_id == made.campaign_id and said == "resume: 1 of 4 runs already recorded, 3 to run"
    assert made.entropy == first[0].entropy and {job.entropy for job in left} == {made.entropy}
    assert [job.sampler_seed for job in left] == [job.sampler_seed for job in first[1:]]  # as if never stopped
    assert left[0].sampler_seed == made.sampler_seed != left[1].sampler_seed  # block 0's seed; block 1 its own

    older = tmp_path / "older"
    records.append(older / records.RESULTS_FILE, replace(made, entropy=None))
    left, campaign_id, said = resume(older, again, clean=False)
    assert left == again and campaign_id != made.campaign_id
    assert said == (
        f"resume: the newest campaign in {older} ({made.campaign_id}) does not record the entropy of its sampler "
        f"seeds (made before its records did), so no new run could share its block's seed: starting a new "
        f"campaign, {campaign_id}, of all 4 runs"
    )


def test_a_second_writer_into_a_folder_is_refused_naming_the_first_or_waits_for_it(tmp_path, monkeypatch, capsys):
    """Two `stanjax run --resume` into one folder had both run its 3 missing runs (7 records under one campaign ID
    for a plan of 4). While another process writes into OUT, `stanjax run` is one line naming it and exit 2, with
    nothing read or appended; with --wait it says so once, waits until the other has finished, then runs."""
    import threading

    from stanjax.runner.commands.cli import main
    from stanjax.runner.core import folder_lock
    from tests.core.test_folder_lock import other

    monkeypatch.setattr(jobs, "run_one", lambda job, timeout_s, log_dir, draws_file, show: _outcome(False))
    out = tmp_path / "results"
    argv = ["run", "--suite", "tiny", "--models", "eight_schools-eight_schools_noncentered", "--out", str(out)]
    holder = other(out, 600)
    try:
        assert main([*argv, "--engines", "stan", "--resume"]) == 2
        said, err = capsys.readouterr()
        assert "resume:" not in said  # refused before what OUT holds was read
        assert err.count("\n") == 1 and err.startswith(f"stanjax run: error: {out} is in use by pid {holder.pid} (")
        assert err.endswith("; wait for it, or add --wait\n") and not (out / records.RESULTS_FILE).exists()

        real_flock, blocked = folder_lock.fcntl.flock, []

        def flock(fd, operation):  # the blocking wait: the other process ends a moment after it starts
            if not operation & folder_lock.fcntl.LOCK_NB:
                blocked.append(threading.Timer(1.0, holder.kill))
                blocked[-1].start()
            return real_flock(fd, operation)

        monkeypatch.setattr(folder_lock.fcntl, "flock", flock)
        assert main([*argv, "--engines", "stan", "numpyro", "--wait"]) == 0
    finally:
        holder.kill()
        holder.wait()
    said = capsys.readouterr().out
    assert said.count("waiting for it to finish") == 1 and f"{out} is in use by pid {holder.pid} (" in said
    assert len(blocked) == 1 and sorted(r.engine for r in records.read(out)) == ["numpyro", "stan"]

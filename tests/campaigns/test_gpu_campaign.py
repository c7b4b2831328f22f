"""The GPU campaign on a CPU: the planner (budget, priority, estimates, lanes), the steps, resume and archives."""

import json
import os
import statistics
import tarfile
import time
from contextlib import nullcontext
from dataclasses import replace as with_fields
from pathlib import Path

import pytest
from msgspec.structs import replace

from stanjax.models import ROOT
from stanjax.runner.campaigns.gpu_campaign import PHASES, Item, Plan, Unit, estimated_s, make_plan, steps, units
from stanjax.runner.campaigns.gpu_steps import all_items, done_items, lanes_left, pack, run_step, step_number
from stanjax.runner.campaigns.studies import RLOUF_CHAINS, RWMH_STEPS
from stanjax.runner.commands.cli import main
from stanjax.runner.core import records
from stanjax.runner.core.config import Job, Placement, RunConfig
from stanjax.runner.measure.estimates import Estimator

FIXTURES = ROOT / "tests" / "fixtures"
EIGHT = "eight_schools-eight_schools_noncentered"
COVTYPE = "covtype_synth-logistic_regression"
BRADLEY_TERRY = "tennis_synth-bradley_terry_hierarchical"
TINY = RunConfig(size="tiny", chains=4, warmup=500, draws=1000)


@pytest.fixture(scope="module")
def history():
    return records.read(FIXTURES / "tiny_repeats2.jsonl")


def test_estimates_come_from_the_same_setup_else_say_how_they_were_made(history):
    estimate = Estimator(history)
    stan = [r for r in history if r.model_id == EIGHT and r.engine == "stan" and r.status == "ok"]
    seconds, basis = estimate(Job(EIGHT, "stan", TINY))
    assert seconds == pytest.approx(statistics.median(r.wall_s for r in stan))
    assert basis.startswith(f"median of {len(stan)} run(s)")

    _, basis = estimate(Job(EIGHT, "blackjax_nuts", TINY, placement=Placement(chain_method="vectorized")))
    assert " of stan/" in basis or " of numpyro/" in basis  # another engine's runs, said so

    n = dict(next(r.sizes for r in history if r.model_id == COVTYPE))["N"]
    covtype = [r.wall_s for r in history if r.model_id == COVTYPE and r.engine == "stan" and r.status == "ok"]
    seconds, basis = estimate(Job(COVTYPE, "stan", with_fields(TINY, resize=(("N", n * 3),))))
    assert "scaled" in basis and seconds == pytest.approx(3 * statistics.median(covtype))
    # Runs at two sizes show how the cost grows: a run 8 times longer at twice N (a Cholesky's N^3) scales as N^3,
    # not in proportion (issue 39: a GP at N = 500 took 10 minutes a run where N = 100 scaled by 5 said 3.7)
    at_2n = [
        replace(r, wall_s=8 * r.wall_s, sizes={**r.sizes, "N": 2 * n})
        for r in history
        if r.model_id == COVTYPE and r.engine == "stan" and r.status == "ok"
    ]
    seconds, basis = Estimator(history + at_2n)(Job(COVTYPE, "stan", with_fields(TINY, resize=(("N", n * 4),))))
    assert seconds == pytest.approx(64 * statistics.median(covtype)) and basis.endswith(
        f"scaled to {4 * n} as N^3 (the power from the runs at N={n})"
    )

    assert "other devices or settings" in estimate(Job(EIGHT, "stan", RunConfig(size="tiny", chains=7)))[1]
    assert estimate(Job(COVTYPE, "stan", RunConfig(size="small", chains=7)))[1] == "no earlier run: a guess"

    # A machine with a GPU is the better witness of a GPU box: its runs are used where there are any.
    on_gpu_box = [
        replace(
            stan[0],
            wall_s=999.0,
            provenance=replace(stan[0].provenance, machine=replace(stan[0].provenance.machine, gpu=["NVIDIA H100"])),
        )
    ]
    assert Estimator(history + on_gpu_box)(Job(EIGHT, "stan", TINY))[0] == 999.0

    # Runs of 500 + 1,000 iterations a chain estimate one of 500 + 2,000 in proportion, and say so (issue 39: the
    # softmax regression's 2,000 draws were estimated from its runs of 1,000 as they were).
    seconds, basis = estimate(Job(EIGHT, "stan", with_fields(TINY, draws=2000)))
    assert seconds == pytest.approx(statistics.median(r.wall_s for r in stan) * 2500 / 1500)
    assert basis.endswith(", scaled to 2,500 iterations a chain")


class Constant:
    """Every run takes ``seconds`` except where ``long`` (engine, N) says otherwise."""

    def __init__(self, seconds: float, long: dict | None = None):
        self.seconds, self.long = seconds, long or {}

    def __call__(self, job):
        n = dict(job.config.resize).get("N")
        return self.long.get((job.engine, n), self.seconds), "constant"

    def measurement(self, backend, device, chains):
        return 5.0, "constant"


def test_the_plan_fits_its_budget_in_priority_order_on_disjoint_cores_and_says_what_it_left_out():
    """Where the claims live first: covtype at 581,012 rows and Bradley-Terry at 200,000 matches, float64 on the GPU
    against Stan with the CPU lane's cores (4 chains x 3 threads of 14 cores), 5 paired blocks."""
    plan = make_plan(20 * 60, 9 * 60, 16, 2, Constant(20.0, {("stan", 1_000_000): 3600.0}), compile_s=120)
    lanes = {lane: plan.items(lane) for lane in ("gpu", "cpu")}
    assert estimated_s(lanes, plan.step_s, 120) <= plan.budget_s
    assert [(u.phase, u.label) for u in plan.units[:2]] == [
        ("claims", f"{COVTYPE} large"),
        ("claims", f"{BRADLEY_TERRY} large"),
    ]
    order = list(PHASES)
    assert [u.phase for u in plan.units] == sorted((u.phase for u in plan.units), key=order.index)  # priority kept
    assert any("over the budget" in why for _, why in plan.left_out)
    for item in lanes["gpu"]:
        assert item.job is None or (item.job.device == "gpu" and (item.job.first_core, item.job.cores) == (0, 2))
    for item in lanes["cpu"]:
        assert item.job is None or (item.job.device == "cpu" and (item.job.first_core, item.job.cores) == (2, 14))
    first = plan.units[0]
    assert [i.job.engine for i in first.items if i.lane == "cpu"] == ["stan"] * 5  # 5 blocks
    assert {i.job.placement.threads_per_chain for i in first.items if i.lane == "cpu"} == {3}
    gpu = [i.job for i in first.items if i.lane == "gpu"]
    assert [j.engine for j in gpu[:4]] == ["numpyro", "blackjax_nuts", "blackjax_nuts", "numpyro"]  # alternating
    assert {(j.placement.precision, j.config.size) for j in gpu} == {("float64", "large")}

    everything = make_plan(10**6, 9 * 60, 16, 2, Constant(20.0, {("stan", 1_000_000): 3600.0}), compile_s=120)
    assert {u.phase for u in everything.units} == set(PHASES)
    assert len(everything.units) == len(units(16, 2, 1, Constant(20.0)))
    too_long = [what for what, why in everything.left_out if "longer than one step" in why]
    assert too_long and all("stan-cpu" in what and "N=1000000" in what for what in too_long)
    # the headline units run 5 paired blocks (an interval and a verdict), the extras 3 (labelled insufficient)
    blocks = {u.phase: {i.job.block for i in u.items} for u in everything.units if u.phase not in ("data", "chains")}
    assert blocks == {
        "claims": set(range(5)),
        "zoo": set(range(5)),
        "float32": set(range(3)),
        "blackjax": set(range(3)),
    }
    gpu_jobs = [i.job for u in everything.units for i in u.items if i.job and i.job.device == "gpu"]
    float32 = {
        (u.phase, u.label)
        for u in everything.units
        for i in u.items
        if i.job and i.job.placement.precision == "float32"
    }
    assert {phase for phase, _ in float32} == {"float32"} and (("float32", f"{COVTYPE} large float32") in float32)
    assert sum(j.placement.precision == "float64" for j in gpu_jobs) > len(gpu_jobs) / 2
    sizes = {i.job.config.resize for u in everything.units if u.phase == "data" for i in u.items}
    assert ((("n_matches", 160_420),)) in sizes and ((("N", 1_000_000),)) in sizes
    chains = [i.job for u in everything.units if u.phase == "chains" for i in u.items if i.job]
    assert max(job.config.chains for job in chains) == 16_384
    assert {i.study for u in everything.units if u.phase == "chains" for i in u.items} == {"chains"}
    # against Stan's many-chain answer (a chain on each of the CPU lane's 14 cores), and rlouf's 1e9 draws whole
    stan = [job for job in chains if job.engine == "stan"]
    assert stan and {(j.device, j.config.chains, j.placement.threads_per_chain) for j in stan} == {("cpu", 14, 1)}
    rlouf = {
        (i.rwmh_device(), i.rwmh[1]) for u in everything.units for i in u.items if i.rwmh and i.rwmh[0] == RLOUF_CHAINS
    }
    assert rlouf == {("gpu", "jax"), ("cpu", "jax")} and RLOUF_CHAINS * RWMH_STEPS["gpu"] == 10**9


def test_a_random_walk_measurement_is_done_on_its_own_device_only(tmp_path):
    plan = make_plan(10**6, 9 * 60, 16, 2, Constant(20.0), compile_s=0, phases=("chains",))
    row = {"measure": "rwmh", "backend": "jax", "device": "cpu", "chains": RLOUF_CHAINS, "steps": 10_000}
    records.append(tmp_path / records.MEASUREMENTS_FILE, records.measurement("chains", row))
    done = [all_items(plan)[i] for i in done_items(plan, tmp_path)]
    assert [(i.lane, i.rwmh) for i in done] == [("cpu", (RLOUF_CHAINS, "jax"))]  # the GPU's is still to run


def test_the_plan_survives_its_file():
    plan = make_plan(15 * 60, 9 * 60, 16, 2, Constant(30.0), compile_s=0)
    again = Plan.from_dict(json.loads(json.dumps(plan.as_dict())))
    assert all_items(again) == all_items(plan) and again.left_out == plan.left_out


def item(lane: str, seconds: float, label: str = "") -> Item:
    return Item(lane, "", seconds, label or f"{lane} {seconds}", rwmh=(int(seconds), "numpy"))


def test_steps_stop_a_lane_at_the_first_item_it_has_no_time_for():
    gpu, cpu = [item("gpu", 200), item("gpu", 201), item("gpu", 202)], [item("cpu", 500)]
    cut = steps({"gpu": gpu, "cpu": cpu}, step_s=540, first_step_s=100)
    assert [[len(step["gpu"]), len(step["cpu"])] for step in cut] == [[2, 0], [1, 1]]
    with pytest.raises(ValueError, match="longer than a step"):
        steps({"gpu": [item("gpu", 600)], "cpu": []}, step_s=540)


def tiny_plan(cpus: int) -> Plan:
    """Two lanes on the CPU (NumPyro standing in for the GPU lane): one item each fits the first step."""
    jobs = {
        "gpu": [Job(EIGHT, "numpyro", TINY, repeat, Placement(), "numpyro", 7, 1, 0) for repeat in (0, 1)],
        "cpu": [Job(EIGHT, "stan", TINY, repeat, Placement(), "bundled", 7, 1, 1) for repeat in (0, 1)],
    }
    items = [Item(lane, "", 20.0 if job.repeat == 0 else 900.0, "test", job=job) for lane in jobs for job in jobs[lane]]
    return Plan(3600, 1000, cpus, 1, [Unit("claims", "eight schools tiny", items)])


def test_the_compile_step_records_its_programs_time_and_machine(tmp_path, monkeypatch):
    """The first step compiles the plan's Stan programs (here: a stand-in that compiles nothing) and appends the
    step, the programs, the time and this machine's slug to compile.json, a second step after it."""
    from stanjax.runner.commands import campaign
    from stanjax.runner.commands import compile as compile_verb
    from stanjax.runner.core.environment import machine

    asked = []
    monkeypatch.setattr(campaign, "compile_each", lambda commands, cores, log: asked.append(commands) or 0)
    monkeypatch.setattr(compile_verb, "cached", lambda model_id, placement: bool(asked))  # the first step built it
    prepared = []
    monkeypatch.setattr(campaign, "prepare", lambda programs, cores, log: prepared.append([m for m, _ in programs]))
    campaign.compile_stan(tiny_plan(2), tmp_path, 1)
    campaign.compile_stan(tiny_plan(2), tmp_path, 2)
    assert [[label for label, _ in commands] for commands in asked] == [[EIGHT]]
    assert prepared == [[EIGHT]]  # what its programs share, built before them; nothing for the second step
    steps = json.loads((tmp_path / "compile.json").read_text())
    assert [(s["step"], s["programs"], s["compiled"], s["failed"], s["machine"]) for s in steps] == [
        (1, 1, 1, False, machine().slug),
        (2, 1, 0, False, machine().slug),
    ]


@pytest.mark.slow
@pytest.mark.stan
def test_a_step_runs_both_lanes_at_once_and_the_next_goes_on_where_it_stopped(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two usable cores")
    plan = tiny_plan(2)
    written = []
    start = time.monotonic()
    # beside the test suite's other worker a run may read as loaded: no rerun here (the rerun has its own test)
    left = run_step(plan, tmp_path, start + 300, 600, written, say=lambda line: None, rerun_loaded=False)
    assert [len(left["gpu"]), len(left["cpu"])] == [1, 1]  # the 900 s items wait for a step with time for them
    assert sorted((r.engine, r.repeat) for r in written) == [("numpyro", 0), ("stan", 0)]
    usable = sorted(os.sched_getaffinity(0))
    assert {r.engine: r.core_ids for r in written} == {"numpyro": [usable[0]], "stan": [usable[1]]}
    assert all(r.status == "ok" for r in written)
    first = pack(tmp_path, 1, {})
    fresh_box = tmp_path / "fresh"  # a new machine: the earlier steps come as their unpacked archives
    with tarfile.open(first[0]) as tar:
        tar.extractall(fresh_box, filter="data")
    assert [len(lane) for lane in lanes_left(plan, fresh_box).values()] == [1, 1] and step_number(fresh_box) == 2

    offsets = {records.RESULTS_FILE: (tmp_path / records.RESULTS_FILE).stat().st_size}
    left = run_step(plan, tmp_path, time.monotonic() + 1000, 600, written, say=lambda line: None, rerun_loaded=False)
    assert left == {"gpu": [], "cpu": []} and lanes_left(plan, tmp_path) == {"gpu": [], "cpu": []}
    keys = [r.key() for r in records.read(tmp_path / records.RESULTS_FILE)]
    assert len(keys) == len(set(keys)) == 4  # nothing ran twice
    second = pack(tmp_path, 2, offsets)

    def runs_in(archive):
        with tarfile.open(archive) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("results.jsonl"))
            return sorted(json.loads(line)["repeat"] for line in tar.extractfile(member).read().splitlines())

    assert runs_in(first[0]) == [0, 0] and runs_in(second[0]) == [1, 1]
    # one campaign over its steps: a block whose runs fall in two steps pairs, its runs sharing their sampler seed
    assert len({(r.campaign_id, r.pairing) for r in written}) == 1 and {r.entropy for r in written} == {7}
    assert all(len({r.sampler_seed for r in written if r.block == block}) == 1 for block in (0, 1))


def test_a_step_goes_on_with_the_campaign_of_the_steps_before_on_this_machine_only(tmp_path, history, monkeypatch):
    """The steps of 2026-11-27's H200 campaign each started a campaign of their own, so covtype's GPU runs of
    step 2 found no Stan run of step 1 to pair with. A step continues the newest earlier step's campaign (its
    records, or unpacked ones) when that step ran on this machine and seeded its runs as the plan seeds them (the
    plan holds the campaign's entropy: a block's runs share their seed across steps); on another machine, or over
    the records of a plan made anew, it starts its own and says why."""
    from stanjax.runner.campaigns import gpu_steps

    box = history[0].provenance.machine
    monkeypatch.setattr(gpu_steps.environment, "machine", lambda: box)
    r = history[0]
    placement = Placement(r.device, r.precision, r.chain_method, r.threads_per_chain, r.isa or "native", r.program)
    job = Job(r.model_id, r.engine, r.config, r.repeat, placement, r.front_end, 7, r.cores or 0)
    assert job.key() == r.key()

    def plan(entropy: int) -> Plan:
        item = Item("cpu", "", 1.0, "test", job=with_fields(job, entropy=entropy))
        return Plan(3600, 1000, 2, 1, [Unit("claims", "one", [item])])

    assert gpu_steps.campaign_to_continue(tmp_path, plan(7)) == (None, "")
    older = replace(r, campaign_id="older", created="2026-11-27T05:19:00+00:00")
    newer = replace(r, campaign_id="newer", created="2026-11-27T05:25:00+00:00", sampler_seed=job.sampler_seed)
    records.append(tmp_path / "step-01-results.jsonl", older)
    records.append(tmp_path / records.RESULTS_FILE, newer)
    assert gpu_steps.campaign_to_continue(tmp_path, plan(7)) == ("newer", "")
    assert gpu_steps.campaign_to_continue(tmp_path, plan(8)) == (
        None,
        "the steps before (newer) seeded their runs otherwise than this plan: its runs start a campaign of their own",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bigger = replace(newer.provenance, machine=replace(box, cores=box.cores + 8))
    records.append(elsewhere / records.RESULTS_FILE, replace(newer, provenance=bigger))
    campaign_id, why = gpu_steps.campaign_to_continue(elsewhere, plan(7))
    assert campaign_id is None and why.startswith("the steps before ran on ")


def test_archives_split_into_parts_under_the_limit_and_keep_every_record(tmp_path):
    lines = [json.dumps({"kind": "run", "n": n, "noise": os.urandom(3000).hex()}) + "\n" for n in range(40)]
    (tmp_path / records.RESULTS_FILE).write_text("".join(lines))
    (tmp_path / "plan.json").write_text("{}")
    kept = len(lines[0].encode()) * 10  # the first ten lines were archived by an earlier step
    parts = pack(tmp_path, 3, {records.RESULTS_FILE: kept}, limit=60_000)
    assert len(parts) > 1 and all(path.stat().st_size <= 60_000 for path in parts)
    found, names = [], []
    for path in parts:
        with tarfile.open(path) as tar:
            names += tar.getnames()
            for member in tar.getmembers():
                if member.name.endswith(".jsonl"):
                    found += tar.extractfile(member).read().decode().splitlines(keepends=True)
    assert sorted(found, key=lambda line: json.loads(line)["n"]) == lines[10:]
    assert names.count("plan.json") == 1 and all(name.startswith("step-03") for name in names if ".jsonl" in name)
    with pytest.raises(ValueError, match="on its own"):
        pack(tmp_path, 4, {}, limit=2_000)


def test_each_stan_program_is_compiled_as_its_runs_build_it(tmp_path, monkeypatch):
    """The compile step builds every (program, ISA, threads) the plan's Stan runs use, so no run compiles its own
    on the clock: here eight schools for x86-64-v3 and its reduce_sum program with 3 threads a chain; the
    command's arguments read back as the placement."""
    from stanjax.runner.commands import campaign
    from stanjax.runner.commands import compile as compile_verb
    from stanjax.runner.commands.compile import parse_model_command

    plan = tiny_plan(2)
    stan = [i for i in plan.units[0].items if i.job.engine == "stan"]
    threaded = with_fields(stan[1].job, placement=Placement(isa="x86-64-v3", threads_per_chain=3))
    stan[0] = with_fields(stan[0], job=with_fields(stan[0].job, placement=Placement(isa="x86-64-v3")))
    stan[1] = with_fields(stan[1], job=threaded)
    plan.units[0].items = [i for i in plan.units[0].items if i.job.engine != "stan"] + stan
    asked = []
    monkeypatch.setattr(campaign, "compile_each", lambda commands, cores, log: asked.extend(commands) or 0)
    monkeypatch.setattr(campaign, "prepare", lambda programs, cores, log: None)
    monkeypatch.setattr(compile_verb, "cached", lambda model_id, placement: False)
    campaign.compile_stan(plan, tmp_path, 1)
    assert [label for label, _ in asked] == [f"{EIGHT} (x86-64-v3)", f"{EIGHT} (x86-64-v3, 3 threads)"]
    built = [parse_model_command(command[3:]) for _, command in asked]
    assert built == [([EIGHT], Placement(isa="x86-64-v3")), ([EIGHT], Placement(isa="x86-64-v3", threads_per_chain=3))]


def test_a_plan_for_another_instruction_set_builds_every_run_for_it():
    plan = make_plan(10**6, 9 * 60, 16, 2, Constant(20.0), compile_s=120, isa="x86-64-v3")
    jobs = [item.job for item in all_items(plan) if item.job]
    assert jobs and {job.placement.isa for job in jobs} == {"x86-64-v3"}
    again = Plan.from_dict(json.loads(json.dumps(plan.as_dict())))
    assert again.isa == "x86-64-v3" and all_items(again) == all_items(plan)
    native = make_plan(10**6, 9 * 60, 16, 2, Constant(20.0), compile_s=120)
    assert {item.job.placement.isa for item in all_items(native) if item.job} == {"native"}


def test_the_dry_run_prints_the_plan_and_needs_no_gpu(tmp_path, capsys):
    code = main(
        [
            "campaign",
            "gpu",
            "--dry-run",
            "--cores",
            "16",
            "--budget",
            "20m",
            "--out",
            str(tmp_path / "c"),
            "--history",
            str(FIXTURES),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "step 1: about" in out and "left out:" in out
    assert "[no earlier run: a guess]" in out  # each run's estimate with its basis (the fixtures hold tiny runs)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--budget", "5x"], "invalid duration"),
        (["--phases", "claims,chians", "--dry-run", "--cores", "16"], "unknown phase 'chians'"),
        (["--step", "30s", "--dry-run", "--cores", "16"], "--step"),
        (["--cores", "16", "--gpu-cores", "16", "--dry-run"], "--gpu-cores"),
        (["--cores", "1000"], "--cores"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) if "duration" in message else nullcontext() as stop:
        code = main(["campaign", "gpu", "--out", str(tmp_path), *argv])
    code = stop.value.code if stop else code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and message in err[-1] and sum("error" in line for line in err) == 1


def test_without_a_gpu_a_step_refuses_before_anything_runs(tmp_path, capsys):
    code = main(
        [
            "campaign",
            "gpu",
            "--out",
            str(tmp_path / "c"),
            "--cores",
            "2",
            "--gpu-cores",
            "1",
            "--history",
            str(FIXTURES),
        ]
    )
    assert code == 2 and "no GPU" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_a_plan_made_with_other_options_is_refused(tmp_path, capsys):
    (tmp_path / "plan.json").write_text(json.dumps(tiny_plan(2).as_dict()))
    code = main(["campaign", "gpu", "--out", str(tmp_path), "--cores", "2", "--gpu-cores", "1", "--dry-run"])
    assert code == 2 and "other options" in capsys.readouterr().err
    args = ["--budget", "60m", "--step", "1000s", "--isa", "x86-64-v3"]  # tiny_plan's budget and step, another ISA
    code = main(["campaign", "gpu", "--out", str(tmp_path), "--cores", "2", "--gpu-cores", "1", *args, "--dry-run"])
    assert code == 2 and "isa native (now x86-64-v3)" in capsys.readouterr().err


@pytest.mark.stan
def test_the_stan_probe_samples_one_chain_of_a_compiled_program_and_refuses_an_uncompiled_one():
    """docker/gpu-stan-probe.py, the program the GPU box's Stan probe traces: here, where Stan works, one chain of
    eight schools (compiled for the host by ``make test``'s precompile) samples; a build nobody compiled is
    exit 2 with one line, before anything forks."""
    import subprocess

    from stanjax.models import ROOT
    from stanjax.runner.measure.jobs import WORKER_PYTHON

    def probe(*args):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [WORKER_PYTHON, "docker/gpu-stan-probe.py", *args]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)

    done = probe(EIGHT, "native")
    assert done.returncode == 0 and f"{EIGHT} (native): one chain sampled" in done.stdout, done.stderr
    module = probe("--module", EIGHT, "native").stdout.strip()
    assert module.endswith(".so") and Path(module).exists()
    missing = probe("gym_funnel-neals_funnel", "x86-64-v2")  # never compiled for that ISA
    assert missing.returncode == 2 and missing.stderr.strip().endswith("compile it first")


def test_a_loaded_run_is_run_once_more_where_the_step_has_time(tmp_path, monkeypatch, history):
    """A run measured beside other work enters no ratio and loses its block; the step runs it once more (the
    loaded record kept) when its estimate fits the step's time left after it, and not when it does not. Each
    stand-in run takes 100 s of the step's clock."""
    from types import SimpleNamespace

    from stanjax.runner.campaigns import gpu_steps
    from stanjax.runner.core.run_measures import MachineLoad

    busy = MachineLoad(other_processes_cores=0.35, load_average_start=1.0, load_average_end=1.0, loaded=True)
    clock = SimpleNamespace(offset=0.0)
    monkeypatch.setattr(gpu_steps, "time", SimpleNamespace(monotonic=lambda: time.monotonic() + clock.offset))
    calls = []

    def run(self, job, study="", timeout_s=None, draws_file=None):
        calls.append((job.engine, job.repeat))
        clock.offset += 100.0
        return replace(history[0], load=busy if len(calls) == 1 else None)

    monkeypatch.setattr(gpu_steps.Recorder, "run", run)
    job = Job(EIGHT, "stan", TINY, 0, Placement(), "bundled", 7, 1, 1)

    def step(estimate_s: float, time_left_s: float, folder: Path) -> list:
        calls.clear()
        plan = Plan(3600, 1000, 2, 1, [Unit("claims", "one", [Item("cpu", "", estimate_s, "test", job=job)])])
        said = []
        run_step(plan, folder, time.monotonic() + clock.offset + time_left_s, 600, [], say=said.append)
        return calls, said

    calls, said = step(20.0, 300.0, tmp_path / "time")
    assert calls == [("stan", 0), ("stan", 0)] and any("is run again; the loaded record is kept" in x for x in said)
    calls, _ = step(200.0, 250.0, tmp_path / "no-time")
    assert calls == [("stan", 0)]  # 150 s left after the first run, 200 s estimated: no second


def _cost(job: Job, ms: float, compile_s: float = 4.0) -> dict:
    from stanjax.runner.measure.gradient_cost import setup_of

    return {
        "measure": "gradient_cost",
        "created": "2026-11-27T12:00:00+00:00",
        "ms_per_gradient": ms,
        "compile_s": compile_s,
        **setup_of(job),
    }


def test_an_estimate_is_composed_from_the_gradient_cost_measured_for_its_setup(history):
    """Steps an iteration (earlier runs of the model, any machine) × iterations × the measured cost, + the engine's
    compile on that device + a start; chains in turn where a vectorised batch does not hold them."""
    from stanjax.runner.measure.estimates import START_S

    stan_job = Job(EIGHT, "stan", TINY, 0, Placement(), "bundled", 7, 2, 0)  # 4 chains on 2 cores: 2 in turn
    numpyro_job = Job(EIGHT, "numpyro", TINY, 0, Placement("gpu", "float64", "vectorized"), "numpyro", 7, 2, 0)
    estimate = Estimator(history, [_cost(stan_job, 0.01), _cost(numpyro_job, 0.5)])
    ok = [r for r in history if r.model_id == EIGHT and r.status == "ok" and r.metrics.gradients_warmup is not None]
    steps = statistics.median(
        (r.metrics.gradients_sampling + r.metrics.gradients_warmup)
        / (r.config.chains * (r.config.warmup + r.config.draws))
        for r in ok
    )
    stan_compile = statistics.median(r.timings.compile_s for r in history if r.engine == "stan" and r.status == "ok")
    seconds, basis = estimate(stan_job)
    assert seconds == pytest.approx(START_S + stan_compile + 1500 * steps * 2 * 0.01 / 1e3)
    assert basis.startswith("composed: 0.01 ms a gradient measured here") and "× 2 chains in turn" in basis
    seconds, basis = estimate(numpyro_job)  # no NumPyro run on a GPU in the history: the measured compile
    assert seconds == pytest.approx(START_S + 4.0 + 1500 * steps * 0.5 / 1e3) and "in turn" not in basis
    # More parallel chains: the same setup (one chain a call), in turn on the job's cores; another data size or
    # model: another setup, estimated from walls as before.
    assert (
        "× 4 chains in turn"
        in estimate(Job(EIGHT, "stan", with_fields(TINY, chains=7), 0, Placement(), "bundled", 7, 2))[1]
    )
    assert not estimate(Job(COVTYPE, "stan", TINY))[1].startswith("composed")


def test_a_step_sets_each_estimate_beside_its_actual_time():
    from stanjax.runner.campaigns.gpu_steps import estimates_summary

    timed = [{"status": "ok", "estimate_s": 10.0, "actual_s": actual} for actual in (6.0, 9.0, 11.0, 19.0, 35.0)] + [
        {"status": "timeout", "estimate_s": 10.0, "actual_s": 600.0}
    ]
    assert estimates_summary(timed) == (
        "estimates: 4 of 5 completed runs took within 2× of their estimate (actual ÷ estimate: median 1.1, 0.6 to 3.5)"
    )


def test_calibrate_measures_each_lanes_setups_on_its_cores_before_planning(tmp_path, capsys, monkeypatch):
    """--calibrate: every setup of the chosen phases measured once, the GPU lane's on its cores and the CPU lane's on
    the rest, appended to OUT's measurements; the plan's estimates are then composed from them."""
    from stanjax.runner.measure import gradient_cost

    asked = {}

    def measure_setups(setups, cpus, **_):
        asked[tuple(cpus)] = setups
        return [{**s, "ms_per_gradient": 0.05, "compile_s": 3.0} for s in setups]

    monkeypatch.setattr(gradient_cost, "measure_setups", measure_setups)
    monkeypatch.setattr("stanjax.runner.commands.campaign.usable_cores", lambda: list(range(16)))
    argv = ["campaign", "gpu", "--dry-run", "--cores", "16", "--phases", "claims", "--budget", "60m", "--calibrate"]
    assert main([*argv, "--out", str(tmp_path / "c"), "--history", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    gpu, cpu = asked[(0, 1)], asked[tuple(range(2, 16))]
    assert {(s["device"], s["precision"], s["chains"]) for s in gpu} == {("gpu", "float64", 4)}
    assert {(s["side"], s["device"], s["threads"]) for s in cpu} == {("stan", "cpu", 3)}  # 14 cores, 4 chains
    assert {s["sizes"].get("N", s["sizes"].get("n_matches")) for s in gpu} == {581_012, 200_000}
    measured = records.read_measurements(tmp_path / "c" / records.MEASUREMENTS_FILE)
    assert len(measured) == len(gpu) + len(cpu) and {m["measure"] for m in measured} == {"gradient_cost"}
    assert "[composed: 0.05 ms a gradient measured here" in out


def test_a_first_step_the_compilation_fills_leaves_its_runs_to_the_next():
    """A run that fits a step but not what the first step's compilation leaves of it waits for step 2 (the planner
    raised "longer than a step" for 5.5-minute steps with 2 minutes of compilation)."""
    cut = steps({"gpu": [item("gpu", 300)], "cpu": [item("cpu", 310)]}, step_s=330, first_step_s=120)
    assert [[len(lane) for lane in step.values()] for step in cut] == [[0, 0], [1, 1]]
    with pytest.raises(ValueError, match="longer than a step"):
        steps({"gpu": [item("gpu", 400)]}, step_s=330)


def test_the_gpu_boxs_httpstan_wheel_leaves_out_the_headers_and_keeps_what_sampling_reads(tmp_path):
    """docker/slim-httpstan.py: a wheel without Stan's C++ headers and the prebuilt services object (the box samples
    carried modules), its RECORD without their lines; the Python code, stanc, the libraries and Stan's version
    header (every record states the Stan version) stay."""
    import importlib.util
    import zipfile

    found = importlib.util.spec_from_file_location("slim_httpstan", ROOT / "docker" / "slim-httpstan.py")
    assert found is not None and found.loader is not None
    slim = importlib.util.module_from_spec(found)
    found.loader.exec_module(slim)
    kept = ["httpstan/models.py", "httpstan/stanc", "httpstan/lib/libtbb.so.2", "httpstan/include/stan/version.hpp"]
    dropped = ["httpstan/include/stan/model/model_base.hpp", "httpstan/stan_services.o"]
    wheel = tmp_path / "httpstan-4.17.0-cp312-cp312-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as made:
        for name in kept + dropped:
            made.writestr(name, "x" * 1000)
        made.writestr("httpstan-4.17.0.dist-info/RECORD", "".join(f"{name},sha256=x,1000\n" for name in kept + dropped))
    before, after = slim.slim(wheel)
    with zipfile.ZipFile(wheel) as done:
        names = set(done.namelist())
        record = done.read("httpstan-4.17.0.dist-info/RECORD").decode()
    assert names == {*kept, "httpstan-4.17.0.dist-info/RECORD"} and after < before
    assert [line.split(",")[0] for line in record.splitlines()] == kept

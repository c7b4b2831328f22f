"""Runs long enough to measure: a pairing whose shorter side samples for under 2 s draws more, both sides alike."""

import pytest
from msgspec.structs import replace

from stanjax.models import ROOT
from stanjax.runner.commands.cli import build_parser
from stanjax.runner.core import records
from stanjax.runner.measure.plan import plan
from stanjax.runner.measure.run_length import MAX_FACTOR, lengthen

FIXTURES = ROOT / "tests" / "fixtures"
EIGHT = "eight_schools-eight_schools_noncentered"
COVTYPE = "covtype_synth-logistic_regression"


@pytest.fixture(scope="module")
def history():
    return records.read(FIXTURES / "tiny_repeats2.jsonl")


def jobs_of(*models):
    args = ["run", "--suite", "tiny", "--engines", "stan", "numpyro", "--repeats", "2", "--models", *models]
    return plan(build_parser().parse_args(args))


def timed(history, model_id, engine, warmup_s, sampling_s):
    """The fixture's ok runs of ``model_id`` by ``engine``, with these clocks."""
    return [
        replace(r, timings=replace(r.timings, warmup_s=warmup_s, sampling_s=sampling_s))
        for r in history
        if r.model_id == model_id and r.engine == engine and r.status == "ok"
    ]


def test_a_short_pairing_draws_more_on_both_sides_and_says_why(history):
    """Stan 0.1 + 0.1 s, NumPyro 0.05 + 0.05 s at 1,000 draws: NumPyro is the shorter; (2 - 0.05) / 0.05 → 39x."""
    short = timed(history, EIGHT, "stan", 0.1, 0.1) + timed(history, EIGHT, "numpyro", 0.05, 0.05)
    jobs = jobs_of(EIGHT)
    draws = jobs[0].config.draws
    longer, lines = lengthen(jobs, short)
    assert {j.config.draws for j in longer} == {39 * draws} and len(longer) == len(jobs) == 4
    assert len({j.config.hash() for j in longer}) == 1  # both sides, every block: one measurement, still paired
    assert lines == [
        f"{EIGHT} (tiny): {draws:,} → {39 * draws:,} draws a chain, both sides (numpyro's sampler took ~0.1 s at "
        f"{draws:,} in earlier runs: runs of at least 2 s)"
    ]
    # At most MAX_FACTOR times; a long enough pairing keeps its draws and says nothing.
    tiny = timed(history, EIGHT, "stan", 0.001, 0.0001) + timed(history, EIGHT, "numpyro", 0.001, 0.0001)
    assert {j.config.draws for j in lengthen(jobs, tiny)[0]} == {MAX_FACTOR * draws}
    long = timed(history, EIGHT, "stan", 1.5, 1.0) + timed(history, EIGHT, "numpyro", 1.0, 1.5)
    assert lengthen(jobs, long) == (jobs, [])
    # Grown to the next tenth, not the next whole factor: NumPyro 0.5 + 1.2 s, (2 - 0.5) / 1.2 = 1.25 → 1.3x
    near = timed(history, EIGHT, "stan", 1.0, 1.0) + timed(history, EIGHT, "numpyro", 0.5, 1.2)
    assert {j.config.draws for j in lengthen(jobs, near)[0]} == {round(1.3 * draws)}


def test_a_pairing_with_no_earlier_run_keeps_its_draws_a_new_side_leaves_it_to_the_others(history):
    jobs = jobs_of(EIGHT, COVTYPE)
    short = timed(history, EIGHT, "stan", 0.1, 0.1) + timed(history, EIGHT, "numpyro", 0.05, 0.05)
    without_covtype = [r for r in short if r.model_id != COVTYPE]
    longer, lines = lengthen(jobs, without_covtype)
    assert {j.config.draws for j in longer if j.model_id == COVTYPE} == {jobs[0].config.draws}
    assert any(line.startswith(f"{COVTYPE} (tiny):") and "no earlier run of stan, numpyro" in line for line in lines)
    # A side new to the model (here NumPyro, never run on it): the other side's length decides, and the line says so.
    stan_only = [r for r in short if r.engine == "stan"]
    grown, (line, _) = lengthen(jobs, stan_only)
    assert {j.config.draws for j in grown if j.model_id == EIGHT} == {19 * jobs[0].config.draws}
    assert "stan's sampler took ~0.2 s" in line and line.endswith("no earlier run of numpyro, decided by the others)")
    resumed, _ = lengthen(jobs, short, fixed={(EIGHT, "tiny"): 7000})
    assert {j.config.draws for j in resumed if j.model_id == EIGHT} == {7000}


def test_the_quick_suite_lengthens_its_short_pairings_and_draws_given_are_kept(tmp_path, capsys, monkeypatch):
    """`stanjax run` applies it where the suite says (quick: 2 s) and --draws is not given; --min-sampler-seconds 0
    turns it off."""
    from stanjax.runner.commands.cli import main
    from stanjax.runner.measure import run_length

    asked = []
    monkeypatch.setattr(run_length, "for_campaign", lambda jobs, min_s, keep: asked.append(min_s) or (jobs, ["said"]))
    base = ["run", "--suite", "quick", "--models", EIGHT, "--estimate", "--out", str(tmp_path)]
    assert main(base) == 0 and asked == [2.0] and "said" in capsys.readouterr().out
    assert main([*base, "--draws", "500"]) == 0 and asked == [2.0]
    assert main([*base, "--min-sampler-seconds", "0"]) == 0 and asked == [2.0]
    assert main([*base, "--min-sampler-seconds", "5"]) == 0 and asked == [2.0, 5.0]


def test_a_machine_that_never_ran_a_model_lengthens_it_from_other_machines_runs(tmp_path, monkeypatch):
    """A fresh clone on a new machine: no results/<its slug>, so the committed runs of other machines tell the
    length (the fixture's eight schools: well under 2 s on a Xeon)."""
    from stanjax.runner.core import environment
    from stanjax.runner.measure import run_length

    other = tmp_path / "results" / "some-other-machine" / "campaign"
    other.mkdir(parents=True)
    (other / records.RESULTS_FILE).write_bytes((FIXTURES / "tiny_repeats2.jsonl").read_bytes())
    monkeypatch.setattr(run_length, "ROOT", tmp_path)
    monkeypatch.setattr(environment, "machine", lambda: environment.Machine(cpu="A New CPU", cores=8))
    jobs = jobs_of(EIGHT)
    longer, (line,) = run_length.for_campaign(jobs, 2.0)
    assert (
        line.startswith(f"{EIGHT} (tiny): {jobs[0].config.draws:,} → ")
        and longer[0].config.draws > jobs[0].config.draws
    )


def test_the_newest_campaign_of_a_setup_tells_its_length(history):
    """An older campaign ran other code (NumPyro timed as its wall less compile spans): its runs do not outvote the
    newest campaign's. Old: NumPyro 0.2 + 0.2 s a run in three campaigns; newest: 0.05 + 0.05 s → 39x, as alone."""

    def campaign(runs, campaign_id, created):
        return [replace(r, campaign_id=campaign_id, created=created) for r in runs]

    old = timed(history, EIGHT, "numpyro", 0.2, 0.2)
    stan = campaign(timed(history, EIGHT, "stan", 0.1, 0.1), "20261127T000000-s", "2026-11-27T00:00:00+00:00")
    older = [
        r for day in ("20", "21", "22") for r in campaign(old, f"202611{day}T000000-a", f"2026-11-{day}T00:00:00+00:00")
    ]
    newest = campaign(timed(history, EIGHT, "numpyro", 0.05, 0.05), "20261128T000000-b", "2026-11-28T00:00:00+00:00")
    jobs = jobs_of(EIGHT)
    longer, (line,) = lengthen(jobs, [*older, *stan, *newest])
    assert {j.config.draws for j in longer} == {39 * jobs[0].config.draws} and "numpyro's sampler took ~0.1 s" in line
    assert lengthen(jobs, [*older, *stan])[1][0].count("stan's sampler took ~0.2 s")  # the old ones, alone

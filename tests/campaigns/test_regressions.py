"""Regression detection on recorded runs (tests/fixtures/tiny_repeats5.jsonl: a real tiny campaign, 5 repeats).

Speed cases keep the real records and replace only their timing metrics: BASE and NEW repeats are drawn around
each group's real median with a stated log-normal noise, NEW slowed by a stated factor, from a fixed seed. The
fixture predates load records and ISAs: its runs are given a quiet machine and a native build here, so that they
may be compared at all (a record without a load is not known to be clean)."""

import json
from pathlib import Path

import numpy as np
import pytest
from msgspec.structs import replace

from stanjax.models import ROOT
from stanjax.runner.campaigns import regressions
from stanjax.runner.commands.cli import main
from stanjax.runner.core import superseded
from stanjax.runner.core.records import read, to_builtins
from stanjax.runner.core.run_measures import MachineLoad
from stanjax.runner.measure import references

FIXTURE = ROOT / "tests" / "fixtures" / "tiny_repeats5.jsonl"


QUIET = MachineLoad(other_processes_cores=0.05, load_average_start=0.2, load_average_end=0.2, loaded=False)
LOADED = MachineLoad(other_processes_cores=1.4, load_average_start=2.5, load_average_end=2.8, loaded=True)


@pytest.fixture(scope="module")
def runs():
    return [replace(r, load=QUIET, isa="native") for r in read(FIXTURE)]


def with_timings(recs, slowdown: float, noise_sd: float, seed: int) -> list:
    """Copies whose ESS/s and ms per gradient are each group's real median × slowdown × log-normal noise."""
    rng = np.random.default_rng(seed)
    groups = {}
    for r in recs:
        groups.setdefault((r.model_id, r.engine), []).append(r)
    out = []
    for group in groups.values():
        ess = np.median([r.metrics.ess_per_s for r in group])
        grad = np.median([r.metrics.ms_per_gradient for r in group])
        for r in group:
            out.append(
                replace(
                    r,
                    metrics=replace(
                        r.metrics,
                        ess_per_s=float(ess / slowdown * np.exp(noise_sd * rng.normal())),
                        ms_per_gradient=float(grad * slowdown * np.exp(noise_sd * rng.normal())),
                    ),
                )
            )
    return out


def flagged(result):
    return [(e["model_id"], e["label"]) for e in result["entries"] if e["speed_regression"]]


def test_the_fixture_runs_are_valid_and_pass_the_gold_check(runs):
    assert len(runs) == 20 and all(r.valid for r in runs)
    result = regressions.find(runs, runs)
    assert not result["regressed"] and flagged(result) == []
    assert {e["gold"]["status"] for e in result["entries"]} == {"passed"}
    assert all(s["status"] == "unchanged" for e in result["entries"] for s in e["speed"].values())
    assert result["version_changes"] == []


def test_a_25_percent_slowdown_with_low_noise_is_flagged(runs):
    base = with_timings(runs, 1.0, 0.02, seed=1)
    new = with_timings(runs, 1.25, 0.02, seed=2)
    result = regressions.find(base, new)
    assert sorted(flagged(result)) == sorted({(r.model_id, r.label) for r in runs})
    for e in result["entries"]:
        assert e["speed"]["ms_per_gradient"]["ratio"] == pytest.approx(1.25, rel=0.05)
        assert e["speed"]["ms_per_gradient"]["p_value"] < 0.05
        assert not e["correctness_regression"]  # a slowdown is not a correctness problem


def test_a_25_percent_difference_within_high_noise_is_not_flagged(runs):
    base = with_timings(runs, 1.0, 0.5, seed=1)
    new = with_timings(runs, 1.25, 0.5, seed=2)
    result = regressions.find(base, new)
    assert flagged(result) == []
    assert all(e["speed"]["ms_per_gradient"]["p_value"] >= 0.05 for e in result["entries"])


def test_an_improvement_is_reported_but_not_a_regression(runs):
    result = regressions.find(with_timings(runs, 1.0, 0.02, 1), with_timings(runs, 0.7, 0.02, 2))
    assert not result["regressed"]
    assert {e["speed"]["ess_per_s"]["status"] for e in result["entries"]} == {"improved"}


def test_a_posterior_mean_shifted_by_one_sd_fails_the_gold_check(runs):
    shifted = [r for r in runs if r.model_id.startswith("eight_schools") and r.engine == "numpyro"][0]
    sd = references.load(shifted.model_id, shifted.size)["parameters"]["mu"]["sd"]
    moved = replace(
        shifted,
        metrics=replace(
            shifted.metrics,
            posterior_mean={**shifted.metrics.posterior_mean, "mu": shifted.metrics.posterior_mean["mu"] + sd},
        ),
    )
    new = [moved if r is shifted else r for r in runs]
    result = regressions.find(runs, new)
    [entry] = [e for e in result["entries"] if e["correctness_regression"]]
    assert (entry["model_id"], entry["label"]) == (shifted.model_id, "NumPyro-CPU")
    assert entry["gold"]["status"] == "failed" and entry["gold"]["worst"]["worst_parameter"] == "mu"
    assert entry["gold"]["worst"]["worst_sd"] == pytest.approx(1.0, abs=0.3)
    assert result["regressions"] == {"speed": 0, "correctness": 1}


def test_valid_in_base_and_invalid_in_new_is_a_correctness_regression(runs):
    new = [
        replace(r, valid=False, failed_gates=["rhat"]) if r.model_id.startswith("covtype") and r.engine == "stan" else r
        for r in runs
    ]
    result = regressions.find(runs, new)
    [entry] = [e for e in result["entries"] if e["correctness_regression"]]
    assert entry["label"] == "httpstan-CPU" and "no valid run in NEW (failed: rhat)" in entry["notes"][0]


def test_version_changes_are_listed(runs):
    new = [
        replace(r, provenance=replace(r.provenance, versions={**r.provenance.versions, "jax": "9.9.9"})) for r in runs
    ]
    [change] = regressions.find(runs, new)["version_changes"]
    assert change["package"] == "jax" and change["new"] == ["9.9.9"] and change["base"] != ["9.9.9"]


def write(path: Path, recs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(to_builtins(r)) + "\n" for r in recs))
    return path


def test_compare_cli_exit_codes_and_regressions_json(runs, tmp_path, capsys):
    base = write(tmp_path / "base" / "results.jsonl", with_timings(runs, 1.0, 0.02, 1))
    slow = write(tmp_path / "slow" / "results.jsonl", with_timings(runs, 1.25, 0.02, 2))
    assert main(["compare", str(base), str(slow)]) == 1
    written = json.loads((tmp_path / "slow" / "regressions.json").read_text())
    assert written["regressions"]["speed"] == 4 and written["paths"]["base"] == str(base)
    assert "REGRESSED" in capsys.readouterr().out
    assert main(["compare", str(base), str(base), "--out", str(tmp_path / "same")]) == 2
    assert "BASE and NEW are the same 20 run record(s)" in capsys.readouterr().err
    calm = write(tmp_path / "calm" / "results.jsonl", with_timings(runs, 1.0, 0.02, 3))
    assert main(["compare", str(base), str(calm), "--out", str(tmp_path / "same")]) == 0
    assert main(["compare", str(base), str(slow), "--threshold", "-1"]) == 2
    assert "--threshold must be in (0, 10)" in capsys.readouterr().err


def test_loaded_runs_and_runs_without_a_load_are_left_out_and_counted(runs):
    """A slowdown measured only on a loaded machine (or with no load recorded) is no regression: those runs are
    left out, and the result says how many and why."""
    base = with_timings(runs, 1.0, 0.02, seed=1)
    slow = with_timings(runs, 1.25, 0.02, seed=2)
    covtype_stan = [r for r in slow if r.model_id.startswith("covtype") and r.engine == "stan"]
    new = [r for r in with_timings(runs, 1.0, 0.02, seed=2) if r.model_id.startswith("eight_schools")]
    new += [replace(r, load=LOADED) for r in slow if r.model_id.startswith("covtype") and r.engine == "numpyro"]
    new += [replace(r, load=None) for r in covtype_stan]
    result = regressions.find(base, new)
    assert flagged(result) == [] and not result["regressed"]
    assert result["left_out"] == {"base": {}, "new": {"loaded": 5, "no load recorded": len(covtype_stan)}}
    only_base = [e for e in result["entries"] if e["model_id"].startswith("covtype")]
    assert len(only_base) == 2 and all(e["notes"] == ["only in BASE"] and e["n_new"] == 0 for e in only_base)
    # the same runs, clean: the slowdown is flagged
    assert len(flagged(regressions.find(base, slow))) == 4


def test_a_superseded_campaign_is_left_out_and_counted(runs, tmp_path, monkeypatch):
    (tmp_path / "SUPERSEDED").write_text(f'''
[[superseded]]
why = "timed under a bug"
fixed_by = "0123abc"
campaigns = ["{runs[0].campaign_id}"]
engines = ["numpyro"]
''')
    entries = superseded.load(tmp_path / "SUPERSEDED")
    monkeypatch.setattr(superseded, "load", lambda: entries)
    base = with_timings(runs, 1.0, 0.02, seed=1)
    new = with_timings(runs, 1.25, 0.02, seed=2)
    result = regressions.find(base, new)
    numpyro = sum(r.engine == "numpyro" for r in runs)
    assert result["left_out"] == {"base": {"superseded": numpyro}, "new": {"superseded": numpyro}}
    assert {e["label"] for e in result["entries"]} == {"httpstan-CPU"}
    assert sorted(flagged(result)) == sorted({(r.model_id, "httpstan-CPU") for r in runs})


def test_records_made_before_fingerprints_are_compared_with_their_slugs_new_records(runs):
    """The nightly after fingerprints: last night's records name "xeon-2core", tonight's "xeon-2core-<fingerprint>";
    they are one machine's measurements, matched by slug, and a 25 % slowdown of tonight's is still flagged. Two
    fingerprinted machines of one slug are never matched."""

    def printed(recs, model):
        machine = {"family": "6", "model": model, "vector": "avx2"}
        return [
            replace(r, provenance=replace(r.provenance, machine=replace(r.provenance.machine, cpu_id=machine)))
            for r in recs
        ]

    base = with_timings(runs, 1.0, 0.02, seed=1)
    new = printed(with_timings(runs, 1.25, 0.02, seed=2), "85")
    assert {r.machine for r in new} != {r.machine for r in base}
    result = regressions.find(base, new)
    assert sorted(flagged(result)) == sorted({(r.model_id, r.label) for r in runs})
    other = regressions.find(printed(base, "79"), new)
    assert flagged(other) == [] and all(e["speed"] is None for e in other["entries"])

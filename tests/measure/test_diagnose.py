"""Failed R-hat named by chain and parameter: a planted stuck chain, a collapsed step size and a distant chain are
each found and named; chains that merely mix slowly name none; a reference stops at the first batch that holds a
stuck chain, naming it."""

import numpy as np
import pytest

from stanjax import models
from stanjax.runner.core.config import RunConfig
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.measure import diagnose, references

CHAINS, DRAWS = 4, 400


def healthy(seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"mu": rng.normal(size=(CHAINS, DRAWS)), "theta": rng.normal(size=(CHAINS, DRAWS, 3))}


def test_healthy_chains_name_nothing():
    assert diagnose.chain_findings(healthy(), [0.3, 0.31, 0.29, 0.3]) == []


def test_a_planted_stuck_chain_is_named_with_where_it_stopped():
    draws = healthy()
    draws["theta"][2, :, 1] = -1.21
    draws["mu"][2] = 0.5
    [finding] = diagnose.chain_findings(draws)
    assert (
        finding.hopeless
        and str(finding) == "chain 3 is stuck: 2 of 4 parameters never moved (sd 0; mu = 0.5, theta[2] = -1.21)"
    )


def test_a_collapsed_step_size_is_named():
    [finding] = diagnose.chain_findings(healthy(), [0.3, 3.7e-57, 0.29, 0.31])
    assert finding.hopeless and str(finding).startswith(
        "chain 2's step size collapsed to 3.7e-57 (the other chains' median 0.3)"
    )


def test_a_chain_in_another_mode_is_named_with_its_parameters():
    draws = healthy()
    draws["theta"][0, :, 2] += 8.0
    [finding] = diagnose.chain_findings(draws)
    assert not finding.hopeless  # more draws may bring it back: the reference goes on
    assert str(finding).startswith("chain 1 sits away from the others on theta[3] (mean 7.9")
    assert "mu" not in str(finding)


class StuckChainEngine:
    """Stands in for an engine whose fourth chain never leaves its initial point (posteriordb's arma-arma11 as
    published: a chain at theta = -1.21, outside the invertible region)."""

    def __init__(self):
        self.batches = 0

    def compile(self, spec, placement):
        return spec

    def sample(self, spec, data, config, seed, placement):
        self.batches += 1
        rng = np.random.default_rng(seed)
        draws = {
            "mu": rng.normal(size=(config.chains, config.draws)),
            "tau": rng.gamma(4.0, size=(config.chains, config.draws)),
            "theta_tilde": rng.normal(size=(config.chains, config.draws, 8)),
        }
        draws["mu"][3], draws["tau"][3], draws["theta_tilde"][3] = 7.0, 0.01, -1.21
        stats = SamplerStats(
            n_leapfrog=np.ones((config.chains, config.draws)),
            divergent=np.zeros((config.chains, config.draws)),
            step_size=[0.3] * config.chains,
        )
        return SampleResult(draws, Timings(0.0, 0.5, 0.5, 1.0, "planted"), stats, {})


def test_a_reference_with_a_stuck_chain_stops_after_the_first_batch_naming_it(monkeypatch):
    engine = StuckChainEngine()
    monkeypatch.setattr(references, "get_engine", lambda name: engine)
    spec = models.get("eight_schools-eight_schools_noncentered")
    config = RunConfig(size="tiny", chains=4, warmup=10, draws=200, seed=1)
    lines = []
    with pytest.raises(references.NotConverged) as failed:
        references.generate(spec, config, "planted", max_batches=8, progress=lines.append)
    assert engine.batches == 1
    message = str(failed.value)
    assert "after batch 1: chain 4 is stuck: 10 of 10 parameters never moved (sd 0; mu = 7" in message
    assert "give inits" in message and "No reference written" in message
    assert any("chain 4 is stuck" in line for line in lines)


def test_a_runs_record_names_the_stuck_chain_under_its_rhat_gate(monkeypatch, tmp_path):
    from stanjax.runner.core.config import Job
    from stanjax.runner.measure import judge, worker

    monkeypatch.setattr(worker, "get_engine", lambda name, front_end=None: StuckChainEngine())
    monkeypatch.setattr(
        worker.energy,
        "Meter",
        lambda span: __import__("contextlib").nullcontext(type("Metered", (), {"result": None})()),
    )
    job = Job("eight_schools-eight_schools_noncentered", "stan", RunConfig(size="tiny", chains=4, draws=200, seed=1))
    measured = worker.run_job(job, tmp_path / "draws.npz")  # the worker's part, then the campaign's judging
    result = judge.load_result(tmp_path / "draws.npz", measured, measured.pop(judge.WARMUP_GRADIENTS))
    gate = judge.judge(job, result, measured["data_hash"])["gates"]["rhat"]
    assert not gate["passed"]
    assert gate["chains"][0].startswith("chain 4 is stuck: 10 of 10 parameters never moved")
    assert gate["advice"] == diagnose.ADVICE

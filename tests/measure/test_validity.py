"""The gates: a correct run passes, and each planted fault fails its gate."""

import numpy as np
import pytest

from stanjax import models
from stanjax.runner.core.engine_registry import SampleResult, SamplerStats, Timings
from stanjax.runner.measure import references, validity
from stanjax.runner.measure.metrics import summarise

MODEL_ID = "eight_schools-eight_schools_noncentered"
GYM_ID = "gym_eight_schools-eight_schools_centered"  # its reference: inference-gym's ground truth
SV_ID = "gym_sp500-stochastic_volatility_sp500"  # inference-gym's ground truth for the target's quantities
CHAINS, DRAWS = 4, 1000


@pytest.fixture(scope="module")
def reference():
    ref = references.load(MODEL_ID, "tiny")
    assert ref is not None, "the committed tiny reference is missing"
    return ref


def draws_like(reference, shift_sd=0.0, seed=0, stuck_chain_shift=0.0, scale_sd=1.0, model_id=MODEL_ID):
    """Independent normal draws with the reference's means and sds (optionally shifted by shift_sd sds, their
    spread scaled by scale_sd), in the model's parameter shapes: of every parameter and quantity the reference
    holds (a ground truth may hold a target's quantities and not the parameters sampled in their place)."""
    spec = models.get(model_id)
    data = spec.data("tiny", 0)
    rng = np.random.default_rng(seed)
    draws = {}
    for parameter in spec.summarised:
        shape = parameter.resolve_shape(data)
        if (f"{parameter.name}[{','.join('1' for _ in shape)}]" if shape else parameter.name) not in reference[
            "parameters"
        ]:
            continue
        columns = []
        for index in np.ndindex(shape):
            ref = reference["parameters"][
                f"{parameter.name}[{','.join(str(i + 1) for i in index)}]" if shape else parameter.name
            ]
            x = rng.normal(ref["mean"] + shift_sd * ref["sd"], scale_sd * ref["sd"], size=(CHAINS, DRAWS))
            x[-1] += stuck_chain_shift * ref["sd"]
            columns.append(x)
        draws[parameter.name] = np.stack(columns, axis=-1).reshape(CHAINS, DRAWS, *shape)
    return draws


def gates_for(draws, reference, divergent=0, data_hash=None, model_id=MODEL_ID):
    div = np.zeros((CHAINS, DRAWS), dtype=bool)
    div.flat[:divergent] = True
    result = SampleResult(
        draws, Timings(1.0, 1.0, 1.0, 2.0, "test"), SamplerStats(np.full((CHAINS, DRAWS), 7), div), {}
    )
    metrics = summarise(result, list(draws))
    applied, why = references.applicable(model_id, "tiny", (), data_hash or reference["header"]["data_hash"])
    return validity.evaluate(metrics, CHAINS, DRAWS, applied, why)


def test_draws_from_the_reference_distribution_pass(reference):
    gates = gates_for(draws_like(reference), reference)
    assert gates["valid"] and gates["failed_gates"] == []
    assert gates["gates"]["reference"]["checked"] and gates["gates"]["reference"]["max_z"] < validity.K_REFERENCE


def test_biased_draws_fail_the_reference_gate(reference):
    gates = gates_for(draws_like(reference, shift_sd=0.5), reference)
    assert not gates["valid"] and gates["failed_gates"] == ["reference"]


def test_a_wrong_spread_with_the_right_mean_fails_the_reference_gate(reference):
    gates = gates_for(draws_like(reference, scale_sd=1.3), reference)
    gate = gates["gates"]["reference"]
    assert gate["sd_checked"] and gate["max_z"] < validity.K_REFERENCE < gate["max_z_sd"]
    assert gates["failed_gates"] == ["reference"]


@pytest.mark.parametrize(
    "shift_sd, scale_sd, passes",
    [(0.0, 1.0, True), (0.3, 1.0, False), (0.0, 1.3, False)],
    ids=["truth", "shifted-0.3-sd", "spread-1.3x"],
)
def test_the_external_ground_truth_gate_sees_a_third_of_an_sd(shift_sd, scale_sd, passes):
    """Draws shaped like inference-gym's ground truth pass its gate; shifted by 0.3 sd, or 1.3 times as spread,
    they fail it. The gate names the package's file as its source, not a reference of ours."""
    truth = models.get(GYM_ID).ground_truth("tiny")
    gates = gates_for(draws_like(truth, shift_sd=shift_sd, scale_sd=scale_sd, model_id=GYM_ID), truth, model_id=GYM_ID)
    gate = gates["gates"]["reference"]
    assert gate["checked"] and gate["sd_checked"] and gate["source"].startswith("outside truth: inference-gym ")
    assert gate["passed"] == passes and gates["valid"] == passes


def heavy_tailed(truth, name, scale_sd=1.0, shift_sd=0.0, seed=1):
    """Student-t draws with 3 degrees of freedom (tail |x|^-3: k = 1/3, an infinite fourth moment, as the mean log
    volatility's posterior), with the ground truth's mean and sd (scaled by scale_sd, shifted by shift_sd sds)."""
    ref = truth["parameters"][name]
    t3 = np.random.default_rng(seed).standard_t(3, size=(CHAINS, DRAWS))
    return ref["mean"] + shift_sd * ref["sd"] + scale_sd * ref["sd"] * t3 / np.sqrt(3.0)


@pytest.fixture(scope="module")
def sv_truth():
    truth = models.get(SV_ID).ground_truth("tiny")
    assert truth is not None and "mean_log_volatility" in truth["parameters"]
    return truth


@pytest.mark.parametrize(
    "shift_sd, scale_sd, passes",
    [(0.0, 1.0, True), (0.3, 1.0, False), (0.0, 1.3, False)],
    ids=["truth", "shifted-0.3-sd", "spread-1.3x"],
)
def test_the_stochastic_volatility_ground_truth_gate_sees_a_third_of_an_sd(sv_truth, shift_sd, scale_sd, passes):
    """The S&P 500 target at T = 100: draws shaped like the package's ground truth for its quantities (the
    persistence, mean log volatility, shock scale and 100 log volatilities) pass its gate; shifted by 0.3 sd, or
    1.3 times as spread (all light-tailed normal draws: every sd checked), they fail it."""
    gates = gates_for(
        draws_like(sv_truth, shift_sd=shift_sd, scale_sd=scale_sd, model_id=SV_ID), sv_truth, model_id=SV_ID
    )
    gate = gates["gates"]["reference"]
    assert gate["checked"] and gate["sd_checked"] and gate["source"].startswith("outside truth: inference-gym ")
    assert gate["sd_not_checkable"] == {} and gate["sd_not_checkable_count"] == 0
    assert gate["passed"] == passes and gates["valid"] == passes
    if shift_sd:
        assert gate["max_z"] > validity.K_REFERENCE
    if scale_sd != 1.0:
        assert gate["max_z"] < validity.K_REFERENCE < gate["max_z_sd"]


def test_a_heavy_tailed_quantitys_sd_is_recorded_as_not_checkable(sv_truth):
    """The tail rule: the mean log volatility drawn heavy-tailed (t with 3 df: k-hat above 1/4) and 1.3 times as
    spread as the ground truth says: its sd is left unchecked, with its k-hat and the limit in the gate, and the run
    passes; its mean is still checked (shifted by 0.3 sd, it fails)."""
    draws = draws_like(sv_truth, model_id=SV_ID)
    draws["mean_log_volatility"] = heavy_tailed(sv_truth, "mean_log_volatility", scale_sd=1.3)
    gates = gates_for(draws, sv_truth, model_id=SV_ID)
    gate = gates["gates"]["reference"]
    assert gates["valid"] and gate["sd_checked"] and gate["sd_khat_limit"] == validity.KHAT_SD_MAX == 0.25
    assert list(gate["sd_not_checkable"]) == ["mean_log_volatility"] and gate["sd_not_checkable_count"] == 1
    assert gate["sd_not_checkable"]["mean_log_volatility"] >= validity.KHAT_SD_MAX
    assert "fourth moment" in gate["sd_not_checkable_why"] and gate["worst_parameter_sd"] != "mean_log_volatility"

    draws["mean_log_volatility"] = heavy_tailed(sv_truth, "mean_log_volatility", shift_sd=0.3)
    gates = gates_for(draws, sv_truth, model_id=SV_ID)
    assert gates["failed_gates"] == ["reference"]
    assert gates["gates"]["reference"]["worst_parameter"] == "mean_log_volatility"


def test_a_wrong_spread_of_a_light_tailed_quantity_still_fails_beside_a_heavy_tailed_one(sv_truth):
    """The rule exempts the heavy-tailed quantity only: the persistence (normal draws) 1.3 times as spread fails
    the sd check while the mean log volatility's sd is recorded as not checkable."""
    draws = draws_like(sv_truth, model_id=SV_ID)
    draws["mean_log_volatility"] = heavy_tailed(sv_truth, "mean_log_volatility")
    truth = sv_truth["parameters"]["persistence_of_volatility"]
    draws["persistence_of_volatility"] = truth["mean"] + 1.3 * (draws["persistence_of_volatility"] - truth["mean"])
    gates = gates_for(draws, sv_truth, model_id=SV_ID)
    gate = gates["gates"]["reference"]
    assert gates["failed_gates"] == ["reference"] and gate["max_z"] < validity.K_REFERENCE
    assert gate["worst_parameter_sd"] == "persistence_of_volatility" and gate["max_z_sd"] > validity.K_REFERENCE
    assert list(gate["sd_not_checkable"]) == ["mean_log_volatility"]


def test_light_tailed_draws_keep_every_sd_checked():
    """k-hat of normal draws stays well below the limit: 500 independent normal quantities of 4 x 1,000 draws all
    keep their sd check (none is exempted by chance)."""
    from stanjax.runner.measure.metrics import tail_khats

    khats = tail_khats({"x": np.random.default_rng(3).normal(size=(CHAINS, DRAWS, 500))}, ["x"])
    assert len(khats) == 500 and max(khats.values()) < validity.KHAT_SD_MAX - 0.1


def test_a_constant_tail_gives_a_nan_khat_not_a_failed_run():
    """A stuck chain repeating its extreme value leaves a constant tail in varying draws, on which arviz-stats
    raises ("All tail values are the same"; a tiny centred eight-schools run crashed on it): that scalar's k-hat is
    NaN (its sd stays checked), the others' are still estimated."""
    from stanjax.runner.measure.metrics import tail_khats

    draws = np.random.default_rng(4).normal(size=(CHAINS, DRAWS, 3))
    stuck = draws[..., 1]
    stuck[stuck > np.quantile(stuck, 0.7)] = stuck.max()
    khats = tail_khats({"x": draws}, ["x"])
    assert np.isnan(khats["x[2]"]) and np.isfinite(khats["x[1]"]) and np.isfinite(khats["x[3]"])


def test_a_ground_truth_without_sd_errors_takes_the_runs_scaling():
    """inference-gym states no MCSE of its sds: the gate scales its mean's standard error as the run's MCSEs scale,
    so heavy tails (a larger mcse_sd / mcse_mean in the run) widen it; a stated one is kept."""
    from stanjax.runner.core.run_measures import RunMetrics

    reference = {
        "parameters": {
            "a": {"mean": 0.0, "mcse_mean": 0.01, "sd": 1.0, "mcse_sd": None},
            "b": {"mean": 0.0, "mcse_mean": 0.01, "sd": 1.0, "mcse_sd": 0.003},
        }
    }
    metrics = RunMetrics(
        n_parameters=2,
        min_ess_bulk=1.0,
        min_ess_tail=1.0,
        worst_parameter=None,
        max_rhat=1.0,
        divergences=0,
        ess_per_s=1.0,
        gradients_sampling=1,
        gradients_warmup=None,
        ms_per_gradient=1.0,
        ess_per_1000_gradients=1.0,
        mean_leapfrog_per_draw=1.0,
        posterior_mean={"a": 0.0, "b": 0.0},
        posterior_mcse={"a": 0.02, "b": 0.02},
        posterior_sd={"a": 1.0, "b": 1.0},
        posterior_mcse_sd={"a": 0.04, "b": 0.01},
    )
    filled = validity.with_sd_errors(reference, metrics)["parameters"]
    assert filled["a"]["mcse_sd"] == pytest.approx(0.02) and filled["b"]["mcse_sd"] == 0.003
    assert reference["parameters"]["a"]["mcse_sd"] is None  # the reference itself is left alone


def test_a_stuck_chain_fails_rhat(reference):
    gates = gates_for(draws_like(reference, stuck_chain_shift=2.0), reference)
    assert "rhat" in gates["failed_gates"] and not gates["valid"]


def test_too_many_divergences_fail(reference):
    gates = gates_for(draws_like(reference), reference, divergent=int(0.02 * CHAINS * DRAWS))
    assert gates["failed_gates"] == ["divergences"]


def test_reference_for_other_data_is_not_applied(reference):
    gates = gates_for(draws_like(reference, shift_sd=0.5), reference, data_hash="0" * 16)
    assert not gates["gates"]["reference"]["checked"] and gates["valid"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # arviz and numpy on NaN and inf draws
@pytest.mark.parametrize("broken", ["constant", "nan", "inf"])
def test_a_nan_or_inf_diagnostic_fails_its_gate(reference, broken):
    """A constant chain gives a NaN R-hat and ESS; non-finite draws give NaN or inf ones: never a silent pass."""
    draws = draws_like(reference)
    if broken == "constant":
        draws["tau"][:] = 1.0
    else:
        draws["tau"][0, 0] = np.nan if broken == "nan" else np.inf
    gates = gates_for(draws, reference)
    expected = {"constant": {"rhat"}, "nan": {"rhat", "ess", "finite"}, "inf": {"finite"}}[broken]
    assert not gates["valid"] and expected <= set(gates["failed_gates"]), gates["failed_gates"]


@pytest.mark.parametrize(
    "field, value",
    [
        ("max_rhat", np.nan),
        ("max_rhat", np.inf),
        ("min_ess_bulk", np.nan),
        ("min_ess_tail", np.inf),
        ("min_ess_bulk", np.nan),
    ],
)
def test_every_gate_fails_on_a_non_finite_diagnostic(reference, field, value):
    from msgspec.structs import replace

    metrics = summarise(
        SampleResult(
            draws_like(reference),
            Timings(1.0, 1.0, 1.0, 2.0, "test"),
            SamplerStats(np.full((CHAINS, DRAWS), 7), np.zeros((CHAINS, DRAWS), bool)),
            {},
        ),
        ["mu", "tau", "theta_tilde"],
    )
    assert validity.evaluate(metrics, CHAINS, DRAWS, None, "no reference")["valid"]
    gates = validity.evaluate(replace(metrics, **{field: value}), CHAINS, DRAWS, None, "no reference")
    assert not gates["valid"] and gates["failed_gates"] == ["rhat" if field == "max_rhat" else "ess"]


def test_ess_below_100_per_chain_fails(reference):
    """Vehtari et al. 2021: at least 100 bulk and tail ESS per chain (400 for 4 chains), the threshold recorded.
    Independent draws pass; the same number of draws with each value repeated 20 times (ESS ~ 4000 / 20) fail."""
    draws = draws_like(reference)
    gates = gates_for(draws, reference)
    assert gates["gates"]["ess"]["limit"] == 400 and gates["gates"]["ess"]["passed"]
    sticky = {name: np.repeat(x[:, : DRAWS // 20], 20, axis=1) for name, x in draws.items()}  # ESS ~ 4000 / 20
    gates = gates_for(sticky, reference)
    assert not gates["gates"]["ess"]["passed"] and "ess" in gates["failed_gates"]
    assert gates["gates"]["ess"]["min_ess_bulk"] < 400


def superchain_metrics(superchain_shift: float, seed: int = 0):
    """64 short chains (100 draws) in 16 superchains of 4; superchain k's draws shifted by k * superchain_shift:
    chains that did not forget their shared start."""
    rng = np.random.default_rng(seed)
    chains, draws = 64, 100
    ids = [chain // 4 for chain in range(chains)]
    x = rng.normal(size=(chains, draws)) + superchain_shift * np.asarray(ids)[:, None]
    result = SampleResult(
        {"x": x},
        Timings(1.0, 1.0, 1.0, 2.0, "test"),
        SamplerStats(np.full((chains, draws), 7), np.zeros((chains, draws), bool)),
        {},
    )
    return summarise(result, ["x"], ids)


def test_many_short_chains_are_judged_by_nested_rhat():
    """Margossian et al. 2024: 64 chains of 100 draws in 16 superchains pass on nested R-hat, with the layout in the
    gate and ESS asked per superchain (1,600, not 6,400); superchains stuck apart fail it."""
    metrics = superchain_metrics(0.0)
    assert metrics.superchains == 16 and metrics.max_rhat_nested < 1.01
    gates = validity.evaluate(metrics, 64, 100, None, "no reference")
    assert gates["valid"], gates["failed_gates"]
    assert gates["gates"]["rhat"] | {"max_rhat_nested": None, "max_rhat": None} == {
        "statistic": "nested R-hat",
        "max_rhat_nested": None,
        "max_rhat": None,
        "superchains": 16,
        "chains_per_superchain": 4,
        "limit": validity.RHAT_MAX,
        "passed": True,
    }
    assert gates["gates"]["ess"]["limit"] == 16 * validity.ESS_PER_CHAIN
    stuck = superchain_metrics(0.03)  # superchain means 0, 0.03, ..., 0.45 sd: not forgotten
    assert stuck.max_rhat_nested > validity.RHAT_MAX
    assert validity.evaluate(stuck, 64, 100, None, "no reference")["failed_gates"] == ["rhat"]


def test_a_crashed_run_is_invalid():
    assert validity.failed_run() == {
        "valid": False,
        "failed_gates": ["completed"],
        "gates": {"completed": {"passed": False}},
    }


@pytest.mark.parametrize("path", sorted(references.REFERENCES_DIR.glob("*.json")), ids=lambda p: p.name)
def test_committed_references_are_generated_and_converged(path):
    import json

    from stanjax import models

    ref = json.loads(path.read_text())
    header = ref["header"]
    assert header["command"].startswith("stanjax reference ") and header["max_rhat"] <= references.RHAT_MAX
    spec = models.get(header["model_id"])
    data = spec.data(header["size"], header["data_seed"])
    assert models.data_hash(data) == header["data_hash"]
    assert len(ref["parameters"]) == sum(int(np.prod(p.resolve_shape(data))) for p in spec.judged)

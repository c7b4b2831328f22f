"""Stochastic volatility of S&P 500 daily returns: inference-gym's ``StochasticVolatilitySP500`` (the full
series, T = 2516) and ``StochasticVolatilitySP500Small`` (the last 100 days), checked against the ground truths
their authors made, not against a reference of ours.

The target (``inference_gym/targets/stochastic_volatility.py``): ``(persistence_of_volatility + 1) / 2 ~ beta(20,
1.5)``, ``mean_log_volatility ~ cauchy(0, 5)``, ``white_noise_shock_scale ~ half-cauchy(0, 2)``; the log volatility
is a stationary AR(1) around ``mean_log_volatility`` (first state with the stationary scale ``white_noise_shock_scale
/ sqrt(1 - persistence^2)``); ``centered_returns[t] ~ normal(0, exp(log_volatility[t] / 2))``.

Data: ``inference_gym/internal/datasets/sp500_closing_prices.py`` (2517 daily closes, 2010-06-25 to 2020-06-24), read
at run time from the installed package and transformed as ``internal/data.py``'s ``sp500_returns(num_points)`` does
(and its Stan twin, which made the ground truth): absolute daily returns (``np.diff`` of the closes, index points,
not log returns), the last ``T`` of them, minus their mean. Ground truth: ``inference_gym/targets/ground_truth/
stochastic_volatility_sp500_small.py`` for T = 100 and ``stochastic_volatility_sp500.py`` for T = 2516; other T have
none. The generator takes any T in 2..2516 (a data-size study's grid), the presets only those two.

Parameterisation. Sampled as the target declares it (the states themselves, centred) NUTS mixed slowly on the full
series (R-hat 1.06 on both engines, 4 x 1000 draws). Sampling standardised innovations ``log_volatility_std``
(non-centred, the Stan User's Guide's form) and ``mean_log_volatility``, as the authors' own Stan program for the
ground truth does, leaves a funnel: as the persistence nears 1 the mean is no longer identified, its spread given
the persistence grows as (1 - persistence)^-1/2 and the prior keeps mass there, so the posterior of
``mean_log_volatility`` has tails ~|x|^-3 (Pareto k = 1/3: finite variance, infinite fourth moment). At T = 100
that form diverged on 0.65-1.46 % of draws (Stan, 4 x 1,000 and 4 x 10,000 draws; NumPyro 1.4 %), Stan's draws
never reached the tails (k-hat 0.00, 0.16) and the sd of the mean log volatility was 0.80-0.94 against the ground
truth's 1.048, the longer run no nearer (0.886 +- 0.022 at 4 x 10,000). Here both sides sample the first state
``initial_log_volatility`` (= ``log_volatility[1]``, which the returns pin) in place of the mean, which follows as
``initial_log_volatility - white_noise_shock_scale * log_volatility_std[1] / sqrt(1 - persistence^2)``: a map of
unit Jacobian, under which the mean's cauchy(0, 5) prior reads ``initial_log_volatility ~ cauchy(that shift, 5)``
(same posterior; ``tests/models/test_models.py`` compares the log density with the target's, written from the package, at
prior points). The mean's spread now lives in an innovation of unit scale: 26 runs of 4 x 1,000 draws at T = 100
(suite settings) reached the tails (k-hat 0.14-0.59, pooled 0.3), diverged on 0.1-0.65 % of draws (one NumPyro run
of 13: 2.35 %) and gave sds of the mean log volatility of 1.07-1.58 (pooled 1.19 Stan, 1.31 NumPyro) and means
7.82-7.91, against the ground truth's 7.915 +- 0.0045: the package's numbers for this one quantity seem to carry
the funnel of the program that made them. Its tails leave an sd check meaningless (no finite fourth moment, so no
MCSE of the sd): the reference gate records it as not checkable wherever its k-hat is >= 0.25
(``runner.measure.validity``), and checks its mean. The target's quantities are the persistence, the shock scale and the
quantities ``mean_log_volatility`` and ``log_volatility`` (Stan transformed parameters, NumPyro deterministic sites).

Target acceptance 0.9 on both engines (``target_accept``), as a Stan user raises adapt_delta for a stochastic
volatility model. At the runs' 0.8 one NumPyro run in ~60 at T = 100 failed its gates (R-hat 1.010, 1.4 %
divergent): one chain began in the neck where the persistence nears 1 and the mean log volatility is barely
identified, with the largest step size warmup gave any chain, and diverged there for ~200 draws before it joined
the others. Fresh sampler seeds, 4 x 1,000 draws, one compiled NumPyro MCMC: at 0.8, 1 of 60 runs invalid and
0.37 % of draws divergent (the last 20); at 0.9, 0 of 20 invalid and 0.20 % divergent, median least bulk ESS 1781
against 1878. The other parameterisations measured the same way did worse at 0.8 (the package's own, mean sampled
and first state non-centred: 11 of 20 invalid; centred first state with the stationary prior: 7 of 20).
"""

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, gym

ID = "gym_sp500-stochastic_volatility_sp500"
# T -> the ground-truth module of the inference-gym target on those data
TRUTHS = {100: "stochastic_volatility_sp500_small", 2516: "stochastic_volatility_sp500"}
QUANTITIES = ("persistence_of_volatility", "mean_log_volatility", "white_noise_shock_scale", "log_volatility")
SIZES = {"tiny": {"T": 100}, "small": {"T": 100}, "default": {"T": 2516}, "large": {"T": 2516}}


def generate(seed: int, T: int) -> dict:
    """The last ``T`` daily returns, centred; ``seed`` is accepted for the common interface and not used."""
    del seed
    returns = np.diff(np.asarray(gym.dataset("sp500_closing_prices").CLOSING_PRICES, dtype=np.float64))
    if not 2 <= T <= returns.size:
        raise SizeError(f"gym_sp500 needs 2 <= T <= {returns.size}, got T={T}")
    last = returns[-T:]
    return {"T": T, "centered_returns": last - np.mean(last)}


def ground_truth(size: str) -> dict | None:
    """The package's ground truth for the preset's T (both presets have one)."""
    T = SIZES[size]["T"]
    if T not in TRUTHS:
        return None
    return gym.ground_truth(TRUTHS[T], {name: name for name in QUANTITIES}, ID, size, generate(0, T))


SPEC = ModelSpec(
    id=ID,
    title="S&P 500 volatility (gym)",
    description="Stochastic volatility of S&P 500 returns (inference-gym), T = 100 or 2516: non-centred AR(1) log "
    "volatility from its first state; the package's ground truth as reference.",
    regime="latent series: T AR(1) states built by a sequential recursion, one observation each",
    parameters=(
        Parameter("persistence_of_volatility"),
        Parameter("initial_log_volatility"),
        Parameter("white_noise_shock_scale"),
        Parameter("log_volatility_std", ("T",)),
    ),
    quantities=(Parameter("mean_log_volatility"), Parameter("log_volatility", ("T",))),
    sizes=SIZES,
    generate=generate,
    n_key="T",
    ground_truth=ground_truth,
    target_accept=0.9,
)

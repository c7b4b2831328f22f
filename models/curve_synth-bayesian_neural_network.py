"""A Bayesian neural network on NumPyro's own toy regression (examples/bnn.py): two tanh hidden layers of H
units, standard normal weights, a noisy curve in one input seen through its powers 1, x and x^2. The regime people
leave Stan for (Semenova, seed 001): many weights, a dense network per gradient, a posterior with symmetries.

Why the gates judge predictions, not weights: swapping two hidden units, or flipping the signs of a unit's weights
in and out, leaves the network's function unchanged, so the posterior has H! 2^H copies of every mode per layer
and no sampler mixes over them; the weights' R-hat means nothing and has no reference. What the posterior says
about data does: the network's output at held-out inputs (``mu_test``) and the held-out observations'
likelihood (``lik_test``; its posterior mean at each point is the posterior predictive density, whose logs sum to
the held-out log predictive density). These quantities are the same in every copy of a mode, so chains in
different copies agree on them; the gates (R-hat, ESS, reference) judge them alone, and the weights' largest R-hat
is recorded, not gated (``judged_by_quantities``). Chains that settle in modes that are not copies (functions that
differ) still disagree on them, and the run fails, as it should.

The held-out inputs lie between the training inputs (midpoints of the grid), inside the data's range, where the
data decide the function; NumPyro's example plots out to |x| = 1.3, where the prior does.

Settings for a fair, affordable campaign. Both samplers ran every draw to the tree-depth limit (~1,020 leapfrog
steps) at step sizes near 0.002, at 480 weights (N 200, H 20) on the 2-core EPYC: Stan 1,962 s a run and 45
divergent draws of 4,000 (1.1 %, over the gate's 1 %), NumPyro 316 s and 19. So the target acceptance is 0.95 on
both engines (``target_accept``), as a Stan user raises adapt_delta when a few draws diverge: smaller steps, the
same saturated trees. And the default network has H = 15 (285 weights, "a few hundred" as the issue asks): a
gradient costs ~0.6 of H = 20's, so five paired blocks fit in about two hours on two cores; the large size keeps
2,700 weights for the machines that can afford it. 2,000 draws a chain at default: at 1,000, of three blocks
at 0.95 one had both runs valid; the others failed on a held-out quantity's R-hat, 1.011 and 1.012 (limit 1.01;
campaign 20261125 on epyc-2core).
"""

import decimal
import math

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, libm

POWERS = 3  # the inputs: 1, x, x^2 (the constant column stands for the first layer's bias)
SIGMA_OBS = 0.05  # the curve's noise before standardising, as NumPyro's example draws it
N_TEST = 25
EXACT = decimal.Context(prec=60)  # a float64 product is exact in 34 digits; its sum with a float64 in 60


def powers(x: np.ndarray) -> np.ndarray:
    """The columns 1, x, x^2, ... by the C library's pow (NumPy's takes an AVX-512 path where there is one)."""
    return libm(math.pow, x[:, None], np.arange(POWERS))


def fused(a: float, b: float, c: float) -> float:
    """a·b + c rounded once, as a fused multiply-add instruction rounds it (exact in decimal arithmetic)."""
    return float(EXACT.fma(decimal.Decimal(a), decimal.Decimal(b), decimal.Decimal(c)))


def curve(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The regression curve, its bits the same on every CPU. ``X @ w`` summed in the order of the BLAS kernel
    the committed references' and records' data were made with (OpenBLAS's AVX2 matrix-vector kernel: w0 + x·w1,
    then x²·w2 fused; other CPUs' kernels sum otherwise), in exact arithmetic; sin from the C library."""
    X = powers(x)
    linear = np.array([fused(row[2], w[2], row[0] * w[0] + row[1] * w[1]) for row in X.tolist()])
    return linear + 0.5 * ((0.5 + x) * (0.5 + x)) * libm(math.sin, 4.0 * x)


def generate(seed: int, N: int, H: int) -> dict:
    """N observations of the curve at evenly spaced x in [-1, 1] and N_TEST held out at points between them, y
    standardised by the training observations' mean and sd; H hidden units per layer."""
    if N < 2 or H < 1:
        raise SizeError(f"curve_synth needs N >= 2 observations and H >= 1 hidden units, got N={N}, H={H}")
    rng = np.random.default_rng(seed)
    w = 0.5 * rng.normal(size=POWERS)
    x = np.linspace(-1.0, 1.0, N)
    x_test = np.linspace(-1.0, 1.0, 2 * N_TEST + 1)[1::2]  # midpoints of a grid of N_TEST cells
    y = curve(x, w) + SIGMA_OBS * rng.normal(size=N)
    y_test = curve(x_test, w) + SIGMA_OBS * rng.normal(size=N_TEST)
    centre, scale = y.mean(), y.std()
    return {
        "N": N,
        "D": POWERS,
        "H": H,
        "X": powers(x),
        "y": (y - centre) / scale,
        "N_test": N_TEST,
        "X_test": powers(x_test),
        "y_test": (y_test - centre) / scale,
    }


SPEC = ModelSpec(
    id="curve_synth-bayesian_neural_network",
    title="Bayesian neural network",
    description="NumPyro's Bayesian neural network example: two tanh layers of H units, N(0, 1) weights, "
    "judged by its predictions at 25 held-out points.",
    regime="dense network: two N x H x H matrix products per gradient, a posterior of symmetric modes",
    # weights: D H + H^2 + H (tiny 21, small 140, default 285, large 2,700)
    parameters=(
        Parameter("w1", ("D", "H")),
        Parameter("w2", ("H", "H")),
        Parameter("w3", ("H",)),
        Parameter("prec_obs"),
    ),
    quantities=(Parameter("mu_test", ("N_test",)), Parameter("lik_test", ("N_test",))),
    judged_by_quantities=True,
    target_accept=0.95,
    min_draws={"default": 2000},
    sizes={
        "tiny": {"N": 20, "H": 3},
        "small": {"N": 100, "H": 10},
        "default": {"N": 200, "H": 15},
        "large": {"N": 1_000, "H": 50},
    },
    generate=generate,
    n_key="N",
)

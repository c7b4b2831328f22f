"""posteriordb's posterior hudson_lynx_hare-lotka_volterra: the Lotka-Volterra predator-prey ODE fitted to the
Hudson's Bay Company's lynx and hare pelts, its data set and reference posterior as an outside truth at default size
(stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Stan's ode_rk45 against diffrax's Dopri5 (the
same Dormand-Prince pair), both at the published tolerances: relative 1e-5, absolute 1e-3, at most 500 steps.

The rewrite: the published program calls ``integrate_ode_rk45``, deprecated since Stan 2.24 (the functions
reference lists it for removal, replaced by the ``ode_*`` solvers): stan/lotka_volterra.stan is the same model in
the ``ode_rk45_tol`` form the documentation teaches today, with the tolerances as data entries (``rel_tol``, ``abs_tol``, ``max_num_steps``) added to posteriordb's data set here, and without the
published posterior predictive draws, which the NumPyro port does not make either.

Default size is posteriordb's data set (N = 20 years, 1900-1920), where its reference applies. The other sizes draw
N yearly measurements from the same model with the reference posterior's means as its parameters (theta 0.55,
0.028, 0.80, 0.024; initial populations 34.0 and 5.9; sigma 0.25 each), solved by SciPy's DOP853 at 1e-10. At
every size the runs solve at the published tolerances; the density comparison (``density_resize``) solves at 1e-10
on both sides, so it compares the two models and not the two solvers' errors: at the published tolerances two
adaptive solvers agree only to about those tolerances.
Measured at 8 draws of a short Stan run (runner/pairing/density.py): at tiny the offset between the two log densities
spreads by 8e-9 (tolerance 1e-6); on posteriordb's data at the published tolerances by 0.048, about what a 0.1 %
change in beta moves it (0.068 at tiny, planted in the port's ODE), where beta's posterior sd is 15 % of its mean:
the two solvers' posteriors differ by far less than a posterior sd, and posteriordb's reference checks each.

Chains start within 0.5 of zero on the unconstrained scale (``init_radius``, on every engine), not the tools' 2:
from 2, a chain can start with a rate e^1.5 times the prior's scale (beta = 4.5 where the posterior is near 0.03),
where the solve fails or collapses and every proposal is rejected. Measured with NumPyro on the small data set
(`stanjax reference --size small --engine numpyro`): at radius 2, 2 of 8 chains stayed there (theta[2] at 4.63 and
theta[4] at 4.44, R-hat 1.69); at 0.5, 24 of 24 chains converged (R-hat 1.0010).
"""

from pathlib import Path

import numpy as np

from stanjax.models import ModelSpec, Parameter, SizeError, exact_log, posteriordb

SPEC_ID = "hudson_lynx_hare-lotka_volterra"
CARRIED = Path(__file__).parent / "posteriordb"
published = posteriordb.fixed_data(CARRIED / "hudson_lynx_hare.json")
THETA = np.array([0.55, 0.028, 0.80, 0.024])  # alpha, beta, gamma, delta
Z_INIT = np.array([34.0, 5.9])
SIGMA = 0.25
PUBLISHED_SOLVER = {"rel_tol": 1e-5, "abs_tol": 1e-3, "max_num_steps": 500}
STATE_DIGITS = 8  # the true states as data keep them: the solve's tolerance is 1e-10, the noise's sd 0.25 in log
TIGHT_SOLVER = {"rel_tol": 1e-10, "abs_tol": 1e-10, "max_num_steps": 100_000}


def dz_dt(t, z, alpha, beta, gamma, delta):
    prey, predator = z
    return [(alpha - beta * predator) * prey, (-gamma + delta * prey) * predator]


def generate(seed: int, N: int, posteriordb_data: int = 0, tight_solver: int = 0) -> dict:
    """posteriordb's data set where ``posteriordb_data`` is 1 (its N), else N yearly measurements of the model; the
    solver's tolerances the published ones, or 1e-10 where ``tight_solver`` is 1."""
    solver = TIGHT_SOLVER if tight_solver else PUBLISHED_SOLVER
    if posteriordb_data:
        data = published(seed)
        if data["N"] != N:
            raise SizeError(f"{SPEC_ID}: posteriordb's data set has N = {data['N']}, the size asks for N = {N}")
        return {**data, **solver}
    if N < 1:
        raise SizeError(f"{SPEC_ID} needs N >= 1 measurement times, got N={N}")
    from scipy.integrate import solve_ivp  # imported here: every worker lists the models (0.3 s)

    ts = np.arange(1.0, N + 1.0)
    states = solve_ivp(
        dz_dt, (0.0, ts[-1]), Z_INIT, method="DOP853", t_eval=ts, args=tuple(THETA), rtol=1e-10, atol=1e-10
    )
    rng = np.random.default_rng(seed)
    return {
        "N": N,
        "ts": ts,
        "y_init": rng.lognormal(exact_log(Z_INIT), SIGMA),
        "y": rng.lognormal(exact_log(significant(states.y.T)), SIGMA),
        **solver,
    }


def significant(values: np.ndarray, digits: int = STATE_DIGITS) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (decimal, correctly rounded): the solver's states
    differ in their last bits with the BLAS kernel of the CPU (its Runge-Kutta sums are matrix products, ~1e-13
    apart at N = 1,000), far below its tolerance; rounded, every CPU gives one data set."""
    return np.array([float(f"{v:.{digits}g}") for v in values.ravel().tolist()]).reshape(values.shape)


SIZES = {
    "tiny": {"N": 10},
    "small": {"N": 20},
    "default": {"N": 20, "posteriordb_data": 1},
    "large": {"N": 200},
}
published_truth = posteriordb.outside_truth(
    CARRIED / "hudson_lynx_hare-lotka_volterra.reference.json",
    SPEC_ID,
    lambda seed: generate(seed, **SIZES["default"]),
)


def ground_truth(size: str) -> dict | None:
    """posteriordb's reference where the data are posteriordb's; at the other sizes, this repository's own."""
    return published_truth(size) if SIZES[size].get("posteriordb_data") else None


SPEC = ModelSpec(
    id=SPEC_ID,
    title="Lotka-Volterra ODE, posteriordb",
    description="posteriordb's hudson_lynx_hare-lotka_volterra (stan case study): predator-prey ODE, lognormal errors.",
    regime="ODE: an adaptive Runge-Kutta solve and its sensitivities over N measurement times per gradient",
    parameters=(Parameter("theta", (4,)), Parameter("z_init", (2,)), Parameter("sigma", (2,))),
    sizes=SIZES,
    generate=generate,
    n_key="N",
    ground_truth=ground_truth,
    init_radius=0.5,
    density_resize=(("tight_solver", 1),),
)

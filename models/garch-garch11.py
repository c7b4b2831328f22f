"""posteriordb's posterior garch-garch11: its Stan program and data set as published but for one change, and its
reference posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by
`stanjax import garch-garch11 --posteriordb /tmp/pdbwt`.

The change: beta1 is sampled as a share of its bound, beta1 = (1 - alpha1) * beta1_share with beta1_share in (0, 1)
and the scaling's log Jacobian, log(1 - alpha1), added; beta1 is a transformed parameter (a quantity here). As
published (``real<lower=0, upper=(1 - alpha1)> beta1``) NumPyro cannot sample it: a support whose bound is computed
from another parameter (`stanjax check garch-garch11`: "NumPyro's MCMC cannot sample 'beta1' as written"; the same
case as tests/fixtures/garch11). The density is the published one (flat on beta1 in (0, 1 - alpha1)); `stanjax check`
on this pair: SAME POSTERIOR, 3 runs a side valid, beta1's mean 0.29 against posteriordb's 0.293."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "garch-garch11"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "garch.json", entries=("T", "y", "sigma1"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="GARCH(1,1), posteriordb",
    description="posteriordb's garch-garch11 (stan benchmark, time series, pathfinder paper).",
    regime="sequential: a short time series (T = 200); a sequential variance recursion per gradient",
    parameters=(Parameter("mu"), Parameter("alpha0"), Parameter("alpha1"), Parameter("beta1_share")),
    quantities=(Parameter("beta1"),),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "garch-garch11.reference.json", SPEC_ID, generate),
)

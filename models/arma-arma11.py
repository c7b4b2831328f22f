"""posteriordb's posterior arma-arma11: its Stan program and data set as published but for one change, and its
reference posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by
`stanjax import arma-arma11 --posteriordb /tmp/posteriordb`.

The change: the moving-average coefficient theta is declared in (-1, 1) (``real<lower=-1, upper=1> theta``; NumPyro:
its normal(0, 2) prior truncated there), where the MA(1) term is invertible. As published (``real theta``) the
program does not sample reliably on either engine: chains that start with |theta| > 1, where the errors grow as
theta^t, stay there. `stanjax check arma-arma11` on the published program (3 runs a side, 4 chains x 1000 + 1000):
NumPyro run 1's chain 2 stuck at theta = 1.43 (step size 6.8e-38), run 2's chain 2 away from the others (phi 0.514
against 0.957); Stan run 2's chain 4 at phi = -1.17, theta = -1.07 (step size 5.3e-9); max R-hat 1.58 and 1.53.
posteriordb's reference draws all lie in -0.26 < theta < 0.23, so the bound leaves the posterior as it is (its
density changes by a constant), and the runs' agreement with that reference shows it.
"""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "arma-arma11"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "arma.json")

SPEC = ModelSpec(
    id=SPEC_ID,
    title="ARMA(1,1), posteriordb",
    description="posteriordb's arma-arma11 (stan benchmark, pathfinder paper, time series).",
    regime="sequential: a recursion over T = 200 observations per gradient",
    parameters=(Parameter("mu"), Parameter("phi"), Parameter("theta"), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "arma-arma11.reference.json", SPEC_ID, generate),
)

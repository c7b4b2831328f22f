"""posteriordb's posterior gp_pois_regr-gp_regr: its Stan program and data set as published, and its reference
posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax
import gp_pois_regr-gp_regr --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "gp_pois_regr-gp_regr"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "gp_pois_regr.json", entries=("N", "x", "y"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="GP regression, posteriordb",
    description="posteriordb's gp_pois_regr-gp_regr (stan benchmark, pathfinder paper, gaussian process model).",
    regime="GP on 11 points: its marginal likelihood (normal observations); an 11 x 11 Cholesky per gradient, overhead-bound",
    parameters=(Parameter("rho"), Parameter("alpha"), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "gp_pois_regr-gp_regr.reference.json", SPEC_ID, generate),
)

"""posteriordb's posterior arK-arK: its Stan program and data set as published, and its reference posterior as an
outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax import arK-arK
--posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "arK-arK"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "arK.json", entries=("K", "T", "y"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="AR(K) regression, posteriordb",
    description="posteriordb's arK-arK (stan benchmark, pathfinder paper).",
    regime="sequential: a short time series (T = 200, K = 5 lags); one 195 x 5 matrix-vector product per gradient, overhead-bound",
    parameters=(Parameter("alpha"), Parameter("beta", ("K",)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "arK-arK.reference.json", SPEC_ID, generate),
)

"""posteriordb's posterior earnings-log10earn_height: its Stan program and data set as published, and its reference
posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax
import earnings-log10earn_height --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "earnings-log10earn_height"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "earnings.json", entries=("N", "earn", "height"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Log10 earnings on height, posteriordb",
    variant_of="Earnings regressions",
    description="posteriordb's earnings-log10earn_height (arm book, stan examples).",
    regime="small linear regression: N = 1,192, 2 coefficients; per-call overhead dominates",
    parameters=(Parameter("beta", (2,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "earnings-log10earn_height.reference.json", SPEC_ID, generate),
)

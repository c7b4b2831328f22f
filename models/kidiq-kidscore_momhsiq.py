"""posteriordb's posterior kidiq-kidscore_momhsiq: its Stan program and data set as published, and its reference
posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax
import kidiq-kidscore_momhsiq --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "kidiq-kidscore_momhsiq"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "kidiq.json", entries=("N", "kid_score", "mom_iq", "mom_hs"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Kid's score on mother's high school and IQ, posteriordb",
    variant_of="Kid's score regressions (kidiq)",
    description="posteriordb's kidiq-kidscore_momhsiq (arm book, stan examples).",
    regime="small linear regression: N = 434, 3 coefficients; per-call overhead dominates",
    parameters=(Parameter("beta", (3,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "kidiq-kidscore_momhsiq.reference.json", SPEC_ID, generate),
)

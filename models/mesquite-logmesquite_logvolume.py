"""posteriordb's posterior mesquite-logmesquite_logvolume: its Stan program and data set as published, and its
reference posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by
`stanjax import mesquite-logmesquite_logvolume --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "mesquite-logmesquite_logvolume"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(CARRIED / "mesquite.json", entries=("N", "weight", "diam1", "diam2", "canopy_height"))

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Mesquite biomass on log canopy volume, posteriordb",
    variant_of="Mesquite biomass regressions",
    description="posteriordb's mesquite-logmesquite_logvolume (arm book, stan examples).",
    regime="small linear regression: N = 46, 2 coefficients; per-call overhead dominates",
    parameters=(Parameter("beta", (2,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(
        CARRIED / "mesquite-logmesquite_logvolume.reference.json", SPEC_ID, generate
    ),
)

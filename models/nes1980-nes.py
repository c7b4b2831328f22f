"""posteriordb's posterior nes1980-nes: its Stan program and data set as published, and its reference posterior as an
outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid out by `stanjax import
nes1980-nes --posteriordb /tmp/pdbwt`."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "nes1980-nes"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(
    CARRIED / "nes1980.json",
    entries=("N", "partyid7", "real_ideo", "race_adj", "educ1", "gender", "income", "age_discrete"),
)

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Party identification, NES 1980, posteriordb",
    variant_of="Party identification, NES",
    description="posteriordb's nes1980-nes (arm book, stan examples).",
    regime="small linear regression: N = 701, 9 coefficients; a pass over N rows, overhead-bound",
    parameters=(Parameter("beta", (9,)), Parameter("sigma")),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "nes1980-nes.reference.json", SPEC_ID, generate),
)

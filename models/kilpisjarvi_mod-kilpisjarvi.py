"""posteriordb's posterior kilpisjarvi_mod-kilpisjarvi: its Stan program and data set as published but for one change,
and its reference posterior as an outside truth (stan-dev/posteriordb at 28f8d3d; models/posteriordb/SOURCE.md). Laid
out by `stanjax import kilpisjarvi_mod-kilpisjarvi --posteriordb /tmp/pdbwt`.

The change: the intercept is sampled at the mean of x (``alpha_c``) and the published ``alpha`` (at x = 0) is a
transformed parameter, alpha = alpha_c - beta * mean(x) (a quantity here): a shear of unit Jacobian, the same
posterior. As published, with x (years) near 4,000, alpha and beta are correlated to within 1e-4 of -1 (alpha's sd
30, beta's 0.0075) and a diagonal metric cannot follow them: `stanjax check kilpisjarvi_mod-kilpisjarvi` gave Stan
2 of 3 runs valid (the third: bulk ESS 144, R-hat 1.047), trees of ~590 leapfrog steps a draw on both engines, 0.23
ESS per 1,000 gradients. With the change: SAME POSTERIOR, 6 of 6 runs valid, 151 ESS per 1,000 gradients."""

from pathlib import Path

from stanjax.models import ModelSpec, Parameter, posteriordb

SPEC_ID = "kilpisjarvi_mod-kilpisjarvi"
CARRIED = Path(__file__).parent / "posteriordb"
generate = posteriordb.fixed_data(
    CARRIED / "kilpisjarvi_mod.json", entries=("N", "x", "y", "xpred", "pmualpha", "psalpha", "pmubeta", "psbeta")
)

SPEC = ModelSpec(
    id=SPEC_ID,
    title="Kilpisjärvi temperature trend, posteriordb",
    description="posteriordb's kilpisjarvi_mod-kilpisjarvi (stan benchmark, linear regression).",
    regime="small linear regression: N = 62; overhead-bound",
    parameters=(Parameter("alpha_c"), Parameter("beta"), Parameter("sigma")),
    quantities=(Parameter("alpha"),),
    sizes=posteriordb.SIZES,
    generate=generate,
    ground_truth=posteriordb.outside_truth(CARRIED / "kilpisjarvi_mod-kilpisjarvi.reference.json", SPEC_ID, generate),
)

"""benchmarks/setup_ratios.py: two setups of one campaign against each other within its blocks, as the committed
tables of stanc's optimiser (and the Stan front ends) are made."""

from msgspec.structs import replace

from benchmarks import setup_ratios
from stanjax.models import ROOT
from stanjax.reports.stats import median_ratio
from stanjax.runner.core import records
from stanjax.runner.core.run_measures import MachineLoad

QUIET = MachineLoad(other_processes_cores=0.01, load_average_start=0.1, load_average_end=0.1, loaded=False)
LOADED = MachineLoad(other_processes_cores=0.9, load_average_start=1.0, load_average_end=1.0, loaded=True)


def fixture_runs() -> list[records.RunRecord]:
    """The tiny suite's 5 blocks of two models, every run measured on a quiet machine."""
    runs = records.read(ROOT / "tests" / "fixtures" / "tiny_repeats5.jsonl", summaries=False)
    return [replace(run, load=QUIET) for run in runs]


def test_the_median_block_ratio_and_its_interval_per_model_and_a_loaded_block_left_out():
    runs = fixture_runs()
    eight = "eight_schools-eight_schools_noncentered"
    rows = setup_ratios.block_ratios(runs, "NumPyro-CPU", "httpstan-CPU")
    by_block = {(r.block_of, r.label): r.metrics.ess_per_s for r in runs if r.model_id == eight and r.status == "ok"}
    blocks = sorted({block for block, _ in by_block})
    expected = sorted(by_block[block, "NumPyro-CPU"] / by_block[block, "httpstan-CPU"] for block in blocks)
    assert sorted(rows[f"{eight} (tiny)"]["ess"]) == expected and len(expected) == 5
    table = setup_ratios.table(runs, "NumPyro-CPU", "httpstan-CPU")
    assert f"| {eight} (tiny) | {median_ratio(expected).value:.3g}× (" in table and "| 5 |" in table

    planted = [
        replace(r, load=LOADED) if r.model_id == eight and r.repeat == 0 and r.engine == "stan" else r for r in runs
    ]
    row = setup_ratios.block_ratios(planted, "NumPyro-CPU", "httpstan-CPU")[f"{eight} (tiny)"]
    assert len(row["ess"]) == 4 and row["left_out"] == ["httpstan-CPU loaded"]
    assert "4 (insufficient data); left out: httpstan-CPU loaded (1 block)" in setup_ratios.table(
        planted, "NumPyro-CPU", "httpstan-CPU"
    )


def test_a_label_no_run_has_is_one_line_and_exit_2(capsys):
    fixture = str(ROOT / "tests" / "fixtures" / "tiny_repeats5.jsonl")
    assert setup_ratios.main([fixture, "--pair", "httpstan-CPU-O1", "httpstan-CPU"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no runs labelled httpstan-CPU-O1 (labels: NumPyro-CPU, httpstan-CPU)" in err

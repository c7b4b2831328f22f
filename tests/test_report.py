"""The report, built from committed records of a real run (tests/fixtures/README.md says which)."""

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from reports.build import build
from runner import records

FIXTURE = Path(__file__).parent / "fixtures" / "tiny_repeats2.jsonl"


@pytest.fixture(scope="module")
def fixture_records():
    return records.read(FIXTURE)


def write(tmp_path, recs):
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory, fixture_records):
    out = tmp_path_factory.mktemp("report")
    return build(FIXTURE, out).read_text(), out


def test_report_is_self_contained(report):
    html, out = report
    assert "<svg" in html  # the chart is inline
    assert not re.search(r"<script|<link|src=\"http|@import", html)
    assert (out / "runs.csv").exists() and (out / "summary.json").exists()


def test_every_record_is_in_the_csv(report, fixture_records):
    _, out = report
    assert len(pd.read_csv(out / "runs.csv")) == len(fixture_records)


def test_ratio_sentences_use_the_median_over_repeats(report, fixture_records):
    html, _ = report
    label = {"stan": "Stan-CPU", "numpyro": "NumPyro-CPU"}
    frame = pd.DataFrame([{"model": r["model_id"], "label": label[r["engine"]], "ess_per_s": r["metrics"]["ess_per_s"]}
                          for r in fixture_records if r["valid"]])
    medians = frame.groupby(["model", "label"]).ess_per_s.median().unstack()
    for model_id, row in medians.iterrows():
        faster, slower = (("Stan-CPU", "NumPyro-CPU") if row["Stan-CPU"] > row["NumPyro-CPU"]
                          else ("NumPyro-CPU", "Stan-CPU"))
        sentence = f"{faster} ≈ {row[faster] / row[slower]:.2g}× {slower}</strong>\nin ESS/s on <code>{model_id}</code>"
        assert sentence in html


def test_strings_from_records_are_escaped(tmp_path, fixture_records):
    crafted = copy.deepcopy(fixture_records[0])
    crafted.update(status="error", error="<script>alert('x')</script>", metrics=None, timings=None,
                   run_id="crafted", model_id="<b>bold</b>-model", valid=False, failed_gates=["completed"])
    html = build(write(tmp_path, [*fixture_records, crafted]), tmp_path / "r").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>bold</b>" not in html


def test_invalid_runs_are_shown_and_left_out_of_ratios(tmp_path, fixture_records):
    recs = copy.deepcopy(fixture_records)
    stan_runs = [r for r in recs if r["model_id"].startswith("eight_schools") and r["engine"] == "stan"]
    for r in stan_runs:
        r.update(valid=False, failed_gates=["rhat"])
    out = tmp_path / "r"
    html = build(write(tmp_path, recs), out).read_text()
    assert "no: rhat" in html
    assert "on <code>eight_schools-eight_schools_noncentered</code>" not in html  # no valid Stan run: no ratio
    assert "on <code>covtype_synth-logistic_regression</code>" in html
    summary = json.loads((out / "summary.json").read_text())["summary"]
    row = next(s for s in summary if s["model_id"].startswith("eight_schools") and s["engine"] == "stan")
    assert row["invalid"] == len(stan_runs) and row["repeats"] == 0


def test_claims_without_gpu_records_say_not_measured(report):
    html, _ = report
    assert "Tran &amp; Hoffman 2018" in html and "no GPU run in these records" in html

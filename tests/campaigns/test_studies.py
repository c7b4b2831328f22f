"""Every study runs at its tiny scale on the CPU and writes run records and measurements with its axis."""

import pytest

from stanjax import models
from stanjax.reports.build import build
from stanjax.runner.campaigns.studies import STUDIES, Study
from stanjax.runner.commands.cli import main
from stanjax.runner.core import records

LOGISTIC, BRADLEY_TERRY = "covtype_synth-logistic_regression", "tennis_synth-bradley_terry_hierarchical"

pytestmark = pytest.mark.slow


@pytest.mark.stan
def test_data_size_study_grows_n_for_both_models(tmp_path):
    assert main(["study", "data-size", "--scale", "tiny", "--out", str(tmp_path)]) == 0
    runs = records.read(tmp_path)
    assert all(r.study == "data-size" and r.status == "ok" for r in runs)
    study = STUDIES["data-size"]
    assert [spec.id for spec in study.models()] == [LOGISTIC, BRADLEY_TERRY]  # from the specs' own studies
    for spec in study.models():
        grown = sorted(r.sizes[spec.n_key] for r in runs if r.model_id == spec.id)
        assert grown == sorted(2 * study.grids["tiny"])  # Stan and NumPyro at every N
    assert len({r.data_hash for r in runs}) == 4  # a new data set per model and N


def test_chains_study_runs_vectorised_samplers_and_rwmh(tmp_path):
    assert main(["study", "chains", "--scale", "tiny", "--out", str(tmp_path)]) == 0
    runs = records.read(tmp_path)
    grid = STUDIES["chains"].grids["tiny"]
    assert sorted((r.engine, r.config.chains) for r in runs) == sorted(
        (e, c) for e in ("numpyro", "blackjax_chees") for c in grid
    )
    assert all(r.chain_method == "vectorized" and r.status == "ok" for r in runs)
    assert {r.label for r in runs} == {"NumPyro-CPU-vectorized", "BlackJAX-ChEES-CPU"}  # default methods unnamed
    rwmh = records.read_measurements(tmp_path)
    assert sorted((m["backend"], m["chains"]) for m in rwmh) == sorted((b, c) for b in ("jax", "numpy") for c in grid)
    assert all(m["draws_per_s"] > 0 and m["ess_bulk"] > 0 and m["provenance"]["git_commit"] for m in rwmh)
    html = build(tmp_path, tmp_path / "report").read_text()
    assert "draws/s at" in html and "1e9 draws in" in html  # the rlouf claim row speaks from the study


def test_rwmh_leaves_ess_out_above_its_chain_limit(monkeypatch):
    from stanjax.runner.campaigns import studies

    monkeypatch.setattr(studies, "ESS_MAX_CHAINS", 2)
    row = studies.rwmh_measurement("tiny", 4, "numpy")
    assert row["ess_bulk"] is None and row["ess_per_s"] is None and row["draws_per_s"] > 0


def test_devices_study_times_the_sharded_gradient_on_8_simulated_devices(tmp_path):
    assert main(["study", "devices", "--scale", "tiny", "--simulate-devices", "8", "--out", str(tmp_path)]) == 0
    rows = records.read_measurements(tmp_path)
    assert sorted((m["model_id"], m["devices"]) for m in rows) == sorted(
        (model_id, n) for model_id in (LOGISTIC, "movielens_synth-matrix_factorization") for n in (1, 2, 4, 8)
    )
    assert all(m["ms_per_gradient"] > 0 and m["backend"] == "cpu" for m in rows)


def test_bad_study_input_exits_2(tmp_path, capsys):
    assert main(["study", "devices", "--simulate-devices", "0", "--out", str(tmp_path)]) == 2
    assert "--simulate-devices must be between 1 and 64" in capsys.readouterr().err


def test_data_size_study_runs_only_the_engines_and_sizes_asked_and_resumes(tmp_path, capsys):
    args = ["study", "data-size", "--scale", "tiny", "--engines", "numpyro", "--max-n", "300", "--out", str(tmp_path)]
    assert main(args) == 0
    runs = records.read(tmp_path)
    assert sorted((r.model_id, r.engine, r.sizes[models.get(r.model_id).n_key]) for r in runs) == [
        (LOGISTIC, "numpyro", 300),
        (BRADLEY_TERRY, "numpyro", 300),
    ]
    assert main([*args, "--resume"]) == 0
    assert len(records.read(tmp_path)) == 2  # nothing ran again
    said = capsys.readouterr().out
    assert "resume: 2 of 2 runs already recorded, 0 to run" in said and "0 of 0 runs ok" in said


def test_a_study_declares_its_shape_and_finds_its_models_on_the_specs():
    for study in STUDIES.values():
        assert isinstance(study, Study) and study.axis and study.measures
        assert set(study.grids) == {"tiny", "cpu", "gpu"} and set(study.engines) == {"cpu", "gpu"}
        assert study.models(), study.name
    assert [s.id for s in STUDIES["devices"].models()] == [LOGISTIC, "movielens_synth-matrix_factorization"]
    assert all(
        spec.shard_rows and set(spec.shard_sizes) == {"tiny", "cpu", "gpu"} for spec in STUDIES["devices"].models()
    )
    assert all(spec.n_key for spec in STUDIES["data-size"].models())


def test_study_refuses_an_engine_it_does_not_run(tmp_path, capsys):
    assert main(["study", "data-size", "--engines", "blackjax_chees", "--out", str(tmp_path)]) == 2
    assert "study data-size on cpu runs stan, numpyro; not blackjax_chees" in capsys.readouterr().err


@pytest.mark.stan
def test_roofline_study_measures_each_side_before_sampling_and_the_report_draws_it(tmp_path):
    """Both sides at both N of the tiny grid, once each (a resumed study measures nothing twice); the report's
    roofline figure draws them and says no GPU was measured."""
    out = tmp_path / "roofline"
    assert main(["study", "roofline", "--scale", "tiny", "--out", str(out)]) == 0
    assert main(["study", "roofline", "--scale", "tiny", "--out", str(out), "--resume"]) == 0
    rows = records.read_measurements(out)
    assert sorted((m["side"], m["sizes"]["N"]) for m in rows) == [
        ("jax", 200),
        ("jax", 2000),
        ("stan", 200),
        ("stan", 2000),
    ]
    assert all(m["measure"] == "gradient_cost" and m["ms_per_gradient"] > 0 for m in rows)
    from stanjax.reports import roofline

    found = roofline.figure(rows)
    assert found["title"].startswith("Roofline") and "no GPU measurement" in found["notes"][-1]
    assert "Stan-CPU float64" in found["svg"] and "JAX-CPU float64" in found["svg"]


@pytest.mark.stan
def test_survey_measures_every_posteriordb_posterior_on_both_sides_in_rounds_and_the_report_draws_it(
    tmp_path, monkeypatch
):
    """The survey's models are the zoo's posteriordb posteriors (two here, made-here models left out); both sides
    on both clocks once a round, the sides' and clocks' order alternating; resumed, nothing twice; the report's
    figure states the geometric mean on equal clocks (the loop's first) and names the posteriors where JAX is
    slower, and a planted slow JAX gradient is named."""
    from stanjax.reports import survey
    from stanjax.runner.campaigns import studies

    found = studies.survey_models()
    assert {"sblrc-blr", "arma-arma11"} <= {spec.id for spec in found}
    assert "eight_schools-eight_schools_noncentered" not in {spec.id for spec in found}
    monkeypatch.setattr(studies, "survey_models", lambda: [models.get("sblrc-blr"), models.get("dogs-dogs")])
    monkeypatch.setitem(STUDIES["survey"].grids, "tiny", [1, 2])
    out = tmp_path / "survey"
    assert main(["study", "survey", "--scale", "tiny", "--out", str(out)]) == 0
    assert main(["study", "survey", "--scale", "tiny", "--out", str(out), "--resume"]) == 0
    rows = records.read_measurements(out)
    setups = [("jax", "dogs-dogs", ""), ("jax", "sblrc-blr", ""), ("stan", "dogs-dogs", "")]
    setups += [("stan", "dogs-dogs", "expert"), ("stan", "sblrc-blr", "")]  # dogs has an expert's program
    assert sorted(
        (m["round"], m["side"], m["model_id"], m["program"] if m["side"] == "stan" else "", m["clock"]) for m in rows
    ) == [(r, *setup, clock) for r in (1, 2) for setup in setups for clock in ("loop", "nuts")]
    first = [(m["side"], m["clock"]) for m in sorted(rows, key=lambda m: m["created"])]
    assert first[:3] == [("stan", "loop")] * 3 and first[3:6] == [("stan", "nuts")] * 3
    assert first[10:12] == [("jax", "nuts")] * 2  # round 2 starts with JAX, inside NUTS
    figure = survey.figure(rows)
    assert (
        figure["title"].startswith("Per-gradient survey") and "geometric mean over 2 posteriordb" in figure["notes"][0]
    )
    assert figure["notes"][0].split(": JAX-CPU")[0].endswith("both in a compiled loop")
    assert "both inside their NUTS" in figure["notes"][1] and "mixed" not in " ".join(figure["notes"])
    assert "as an expert writes it for the 1 with such a program" in figure["notes"][0]
    published = [
        {**m, "ms_per_gradient": 10 * m["ms_per_gradient"]} if m["side"] == "stan" and not m["program"] else m
        for m in rows
    ]
    table = survey.table(published)
    assert sorted(table.clock.unique()) == ["loop", "nuts"]
    table = table[table.clock == "loop"].set_index("model_id")
    assert table.speedup["dogs-dogs"] == pytest.approx(table["stan-expert"]["dogs-dogs"] / table.jax["dogs-dogs"])
    assert table.published["dogs-dogs"] == pytest.approx(table.stan["dogs-dogs"] / table.jax["dogs-dogs"])
    assert table.published["dogs-dogs"] != pytest.approx(table.speedup["dogs-dogs"])
    assert table.speedup["sblrc-blr"] == table.published["sblrc-blr"]  # no expert's program: as published
    assert "against Stan as published everywhere" in survey.figure(published)["notes"][0]
    planted_ms = {"dogs-dogs": 1e3, "sblrc-blr": 1e-9}  # sblrc's own JAX-vs-Stan order is machine noise at tiny sizes
    planted = [{**m, "ms_per_gradient": planted_ms[m["model_id"]]} if m["side"] == "jax" else m for m in rows]
    assert "slower than Stan on 1: dogs-dogs" in survey.figure(planted)["notes"][0]

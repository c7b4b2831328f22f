"""Every study runs at its tiny scale on the CPU and writes run records and measurements with its axis."""

import pytest

from reports.build import build
from runner import records, studies
from runner.cli import main

pytestmark = pytest.mark.slow


def test_data_size_study_grows_n_for_both_models(tmp_path):
    assert main(["study", "data-size", "--scale", "tiny", "--out", str(tmp_path)]) == 0
    runs = records.read(tmp_path)
    assert all(r["study"] == "data-size" and r["status"] == "ok" for r in runs)
    for model_id, (_, entry, grids) in studies.DATA_SIZE.items():
        grown = sorted(r["sizes"][entry] for r in runs if r["model_id"] == model_id)
        assert grown == sorted(2 * grids["tiny"])  # Stan and NumPyro at every N
    assert len({r["data_hash"] for r in runs}) == 4  # a new data set per model and N


def test_chains_study_runs_vectorised_samplers_and_rwmh(tmp_path):
    assert main(["study", "chains", "--scale", "tiny", "--out", str(tmp_path)]) == 0
    runs = records.read(tmp_path)
    assert sorted((r["engine"], r["config"]["chains"]) for r in runs) == sorted(
        (e, c) for e in studies.CHAINS_ENGINES for c in studies.CHAINS["tiny"])
    assert all(r["chain_method"] == "vectorized" and r["status"] == "ok" for r in runs)
    rwmh = records.read(tmp_path, kind="measurement")
    assert sorted((m["backend"], m["chains"]) for m in rwmh) == sorted(
        (b, c) for b in ("jax", "numpy") for c in studies.CHAINS["tiny"])
    assert all(m["draws_per_s"] > 0 and m["ess_bulk"] > 0 and m["provenance"]["git_commit"] for m in rwmh)
    html = build(tmp_path, tmp_path / "report").read_text()
    assert "draws/s at" in html and "1e9 draws in" in html  # the rlouf claim row speaks from the study


def test_devices_study_times_the_sharded_gradient_on_8_simulated_devices(tmp_path):
    assert main(["study", "devices", "--scale", "tiny", "--simulate-devices", "8", "--out", str(tmp_path)]) == 0
    rows = records.read(tmp_path, kind="measurement")
    assert sorted((m["model_id"], m["devices"]) for m in rows) == sorted(
        (model_id, n) for model_id in studies.DEVICES_SIZES["tiny"] for n in (1, 2, 4, 8))
    assert all(m["ms_per_gradient"] > 0 and m["backend"] == "cpu" for m in rows)


def test_bad_study_input_exits_2(tmp_path, capsys):
    assert main(["study", "devices", "--simulate-devices", "0", "--out", str(tmp_path)]) == 2
    assert "--simulate-devices must be between 1 and 64" in capsys.readouterr().err


def test_data_size_study_runs_only_the_engines_and_sizes_asked_and_resumes(tmp_path, capsys):
    args = ["study", "data-size", "--scale", "tiny", "--engines", "numpyro", "--max-n", "300", "--out", str(tmp_path)]
    assert main(args) == 0
    runs = records.read(tmp_path)
    assert sorted((r["model_id"], r["engine"], r["sizes"][studies.DATA_SIZE[r["model_id"]][1]]) for r in runs) == [
        (studies.LOGISTIC, "numpyro", 200), (studies.BRADLEY_TERRY, "numpyro", 300)]
    assert main([*args, "--resume"]) == 0
    assert len(records.read(tmp_path)) == 2  # nothing ran again
    assert "0 of 0 runs ok" in capsys.readouterr().out


def test_study_refuses_an_engine_it_does_not_run(tmp_path, capsys):
    assert main(["study", "data-size", "--engines", "blackjax_chees", "--out", str(tmp_path)]) == 2
    assert "study data-size on cpu runs stan, numpyro; not blackjax_chees" in capsys.readouterr().err

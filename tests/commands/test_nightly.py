"""``stanjax nightly`` end to end at tiny size (two nights, the second compared with the first), and the history
store it writes."""

import json

import pytest

from stanjax.runner.commands.cli import main
from stanjax.runner.core import environment, history, records

pytestmark = [pytest.mark.slow, pytest.mark.stan]  # nightly campaigns (Stan and NumPyro)
EIGHT = "eight_schools-eight_schools_noncentered"


def test_two_nightly_runs_the_second_compared_with_the_first(tmp_path, capsys):
    # 2 repeats a night: enough for the Mann-Whitney test to run (it needs 2 a side; with 2 or 3 it can never reach
    # p < 0.05, so the speed verdict is "unchanged" either way and the exit code follows the correctness checks)
    # runs of tiny length: the lengthening is run_length's, tested there
    args = ["nightly", "--history", str(tmp_path), "--size", "tiny", "--models", EIGHT, "--repeats", "2"]
    args += ["--min-sampler-seconds", "0"]
    assert main(args) == 0
    assert "no baseline: this is the first nightly" in capsys.readouterr().out
    code = main(args)
    first, second = history.run_folders(tmp_path)
    assert first.parent == second.parent and first.parent.name == environment.machine().slug
    assert history.previous(second) == first
    comparison = json.loads((second / "regressions.json").read_text())
    assert comparison["base"]["campaigns"] == [r.campaign_id for r in records.read(first)][:1]
    assert comparison["new"]["campaigns"] == [records.read(second)[0].campaign_id]
    assert code == (1 if comparison["regressed"] else 0)
    assert {(e["label"], e["n_base"], e["n_new"]) for e in comparison["entries"]} <= {
        (label, n, m) for label in ("Stan-CPU", "NumPyro-CPU") for n in range(3) for m in range(3)
    }
    html = (second / "report" / "index.html").read_text()
    assert '<section id="nightly">' in html and f"History: {EIGHT} (tiny)" in html
    assert not (first / "regressions.json").exists()  # the first night had nothing to compare with
    capsys.readouterr()
    assert main(["history", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    assert first.name in listing and second.name in listing


def test_a_missing_baseline_or_history_is_bad_input(tmp_path, capsys):
    assert (
        main(
            [
                "nightly",
                "--history",
                str(tmp_path),
                "--baseline",
                str(tmp_path / "nope"),
                "--models",
                EIGHT,
                "--size",
                "tiny",
            ]
        )
        == 2
    )
    assert "no results at" in capsys.readouterr().err
    assert main(["nightly", "--history", str(tmp_path), "--alpha", "2", "--size", "tiny"]) == 2
    assert main(["nightly", "--history", str(tmp_path), "--min-sampler-seconds", "-1", "--size", "tiny"]) == 2
    assert "--min-sampler-seconds must be" in capsys.readouterr().err
    assert history.run_folders(tmp_path) == []  # nothing ran
    assert main(["history", str(tmp_path)]) == 2

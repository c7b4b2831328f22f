"""A run's progress while it runs: reports in its log, read whole-line by the waiting campaign, shown on the bar
or once a minute in a log; Stan's from what its chains send, nutpie's from its callback."""

from types import SimpleNamespace

import numpy as np
import pytest

from stanjax.runner.core import run_progress
from stanjax.runner.engines import stan_bundled, stan_output
from stanjax.runner.engines.nutpie import progress_text
from stanjax.runner.engines.stan_output import DRAWS_HEADER


def test_the_reader_returns_the_newest_whole_report_and_reads_on(tmp_path):
    log = tmp_path / "run.log"
    reader = run_progress.LogReader(log)
    assert reader.newest() is None  # no log yet
    log.write_text("compiling...\nprogress: building the stan model\nprogress: sampling: 4 chains\nother\n")
    assert reader.newest() == "sampling: 4 chains"
    assert reader.newest() is None  # nothing new
    with open(log, "a") as stream:
        stream.write("progress: Stan: iteration 100 of 2,0")  # half written
    assert reader.newest() is None
    with open(log, "a") as stream:
        stream.write("00 (warmup)\n")
    assert reader.newest() == "Stan: iteration 100 of 2,000 (warmup)"


def test_a_throttle_lets_one_report_through_a_period():
    throttle = run_progress.Throttle(3600)
    assert throttle.due() and not throttle.due()
    assert run_progress.Throttle(0).due() and run_progress.Throttle(0).due()


def test_a_log_gets_a_line_a_minute_and_the_bar_every_report():
    said = []
    show = run_progress.in_log("eight schools · stan", lambda text, **_: said.append(text))
    show("sampling", 1.0)
    show("sampling", run_progress.LOGGED_S - 1)
    assert said == []  # a short run adds no line to a log
    show("Stan: iteration 1,200 of 2,000 (sampling)", run_progress.LOGGED_S + 1)
    show("Stan: iteration 1,300 of 2,000 (sampling)", run_progress.LOGGED_S + 2)
    assert said == [
        f"  eight schools · stan: Stan: iteration 1,200 of 2,000 (sampling) ({run_progress.LOGGED_S + 1:.0f} s)"
    ]

    bar = SimpleNamespace(description="")
    progress = SimpleNamespace(update=lambda task, description: setattr(bar, "description", description))
    run_progress.on_bar("eight schools · stan", progress, 0)("NumPyro: warmup", 12.4)
    assert bar.description == "eight schools · stan · NumPyro: warmup · 12 s"


def logger_line(iteration: int, total: int, phase: str) -> bytes:
    return b'{"version":1,"topic":"logger","values":["info:Iteration: %d / %d [ %d%%]  (%s)"]}\n' % (
        iteration,
        total,
        100 * iteration // total,
        phase.encode(),
    )


def draws_sent(rows: list[tuple[float, ...]]) -> bytearray:
    columns = ["lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__", "mu"]
    body = np.array([list(row) for row in rows], dtype=np.float64).tobytes() if rows else b""
    return bytearray(DRAWS_HEADER + "\t".join(columns).encode() + b"\n" + body)


def test_stan_iterations_and_trees_are_read_from_what_the_chains_sent():
    sent = bytearray(logger_line(100, 2000, "Warmup") + logger_line(1100, 2000, "Sampling"))
    sent += bytes(64)  # the receiving buffer's unfilled end
    assert stan_output.latest_iteration(sent, len(sent) - 64) == (1100, 2000, "Sampling")
    assert stan_output.latest_iteration(sent, len(logger_line(100, 2000, "Warmup")) - 5) is None  # half received
    assert stan_output.latest_iteration(b"no message yet", 14) is None

    draws = draws_sent([(-1, 0.9, 0.5, 3, 7, 0, 1, 0.1), (-1, 0.9, 0.5, 5, 31, 0, 1, 0.2)])
    assert stan_output.last_tree(draws, len(draws)) == (5, 31)
    assert stan_output.last_tree(draws + bytes(64), len(draws) - 8) == (3, 7)  # the second row half received
    assert stan_output.last_tree(draws_sent([]), len(draws_sent([]))) is None


def chain(number: int, logger: bytes, draws: bytearray) -> list[stan_bundled.Received]:
    received = []
    for sent in (logger, draws):
        connection = stan_bundled.Received(number)
        connection.buffer[: len(sent)] = sent
        connection.size = len(sent)
        received.append(connection)
    return received


def test_stan_reports_its_slowest_chain_and_that_chains_last_tree(capsys):
    fast = chain(1, logger_line(1900, 2000, "Sampling"), draws_sent([(-1, 0.9, 0.5, 2, 3, 0, 1, 0.1)]))
    slow = chain(2, logger_line(1200, 2000, "Sampling"), draws_sent([(-1, 0.9, 0.5, 4, 15, 0, 1, 0.1)]))
    stan_bundled._report_progress([*fast, *slow], 2)
    assert capsys.readouterr().out == (
        "progress: Stan: iteration 1,200 of 2,000 (sampling), the slowest of 2 chains; "
        "its last tree 15 leapfrog steps (depth 4)\n"
    )
    warming = chain(1, logger_line(100, 2000, "Warmup"), draws_sent([]))
    stan_bundled._report_progress(warming, 1)
    assert capsys.readouterr().out == "progress: Stan: iteration 100 of 2,000 (warmup)\n"
    stan_bundled._report_progress([stan_bundled.Received(1)], 1)
    assert capsys.readouterr().out == ""  # nothing said yet: nothing reported


def test_nutpie_reports_its_slowest_chain_and_every_divergence():
    chains = [
        SimpleNamespace(finished_draws=1500, total_draws=2000, latest_num_steps=7, divergences=1),
        SimpleNamespace(finished_draws=900, total_draws=2000, latest_num_steps=15, divergences=2),
    ]
    assert progress_text(chains) == (
        "nutpie: draw 900 of 2,000 (tuning first), the slowest of 2 chains; its last tree 15 leapfrog steps; "
        "3 divergent"
    )


@pytest.mark.stan
def test_a_waiting_campaign_sees_a_runs_reports_and_its_log_keeps_them(tmp_path, monkeypatch):
    from stanjax.runner.core.config import Job, RunConfig
    from stanjax.runner.measure import jobs

    monkeypatch.setattr(run_progress, "POLL_S", 0.05)  # a tiny run's few seconds read many times
    shown = []
    job = Job(
        "eight_schools-eight_schools_noncentered", "stan", RunConfig(size="tiny", chains=2, draws=200, warmup=200)
    )
    assert jobs.run_one(job, 300, tmp_path, show=lambda text, elapsed: shown.append(text))["status"] == "ok"
    log = (tmp_path / job.log_name()).read_text()
    assert "progress: building the stan model" in log
    assert "progress: sampling: 2 chains of 200 warmup iterations and 200 draws" in log
    assert "progress: saving the draws" in log
    assert shown and all(text in log for text in shown)

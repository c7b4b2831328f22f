"""Engine internals that need no sampler run: Stan's elapsed-time report and the JAX compile clock."""

from runner.engines.jax_setup import CompileClock
from runner.engines.stan import _parse_elapsed


def test_stan_elapsed_time_report_is_parsed():
    output = (b'{"topic":"logger","values":["info: Elapsed Time: 0.125 seconds (Warm-up)"]}\n'
              b'{"topic":"logger","values":["info:                0.5 seconds (Sampling)"]}\n')
    assert _parse_elapsed(output) == {"warmup": 0.125, "sampling": 0.5}


def test_compile_clock_counts_overlapping_spans_once():
    clock = object.__new__(CompileClock)
    clock.spans = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]
    assert clock.seconds() == 4.0

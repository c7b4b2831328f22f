"""The bundled Stan's own chain driver over httpstan's compiled NUTS: the same seed gives pystan's draws for every
model, the flat columns are regrouped in Stan's column-major order, and Stan's errors reach the caller."""

import numpy as np
import pytest
import stan

import models
from runner.config import RunConfig
from runner.engines.stan import HttpstanBackend, group_columns, sample_table

CONFIG = RunConfig(size="tiny", chains=2, warmup=150, draws=100)
SEED = 12345


@pytest.fixture(scope="module")
def backend():
    return HttpstanBackend()


@pytest.mark.slow
@pytest.mark.parametrize("model_id", sorted(models.registry()))
def test_same_seed_gives_pystans_draws(backend, model_id):
    spec = models.get(model_id)
    data = spec.data(CONFIG.size, CONFIG.data_seed())
    ours = backend.sample(backend.compile(spec), data, CONFIG, SEED)
    fit = stan.build(spec.stan_file.read_text(), data=data, random_seed=SEED).sample(
        num_chains=CONFIG.chains, num_warmup=CONFIG.warmup, num_samples=CONFIG.draws,
        delta=CONFIG.target_accept, max_depth=CONFIG.max_treedepth)

    def by_chain(name, shape):  # pystan: (*shape, draws * chains), chain index fastest
        return np.moveaxis(fit[name].reshape(*shape, -1, CONFIG.chains), (-2, -1), (1, 0))

    assert set(ours.draws) == set(fit.param_names)
    for name, shape in zip(fit.param_names, fit.dims):
        np.testing.assert_array_equal(ours.draws[name], by_chain(name, shape), err_msg=name)
    np.testing.assert_array_equal(ours.stats.n_leapfrog, by_chain("n_leapfrog__", []))
    assert ours.info["stan_interface"] == "httpstan"
    assert len(ours.timings.detail["chain_warmup_s"]) == CONFIG.chains


def test_flat_columns_are_regrouped_column_major():
    # Stan writes matrix z[2,3] as z.1.1, z.2.1, z.1.2, ...; value 10*i + j marks z[i,j].
    z_columns = [f"z.{i}.{j}" for j in (1, 2, 3) for i in (1, 2)]
    columns = ["lp__", "n_leapfrog__", "mu", *z_columns, "v.1", "v.2"]
    row = [-1.0, 3.0, 0.5, *(10 * int(c.split(".")[1]) + int(c.split(".")[2]) for c in z_columns), 7.0, 8.0]
    values = np.array([[row, row], [row, row]])  # (chains, draws, columns)
    draws = group_columns(columns, values)
    assert set(draws) == {"mu", "z", "v"}
    assert draws["mu"].shape == (2, 2) and draws["v"].shape == (2, 2, 2)
    np.testing.assert_array_equal(draws["z"][0, 0], [[11, 12, 13], [21, 22, 23]])
    np.testing.assert_array_equal(draws["v"][1, 1], [7, 8])


def test_sample_lines_are_read_with_nan_and_count_checked():
    lines = [b'{"version":1,"topic":"logger","values":["info:Iteration: 1 / 2"]}',
             b'{"version":1,"topic":"sample","values":["Adaptation terminated"]}',
             b'{"version":1,"topic":"sample","values":{"lp__":-1.5,"y":NaN}}',
             b'{"version":1,"topic":"sample","values":{"lp__":-2.5,"y":3.0}}']
    columns, table = sample_table(b"\n".join(lines), draws=2)
    assert columns == ["lp__", "y"]
    assert table[0, 0] == -1.5 and np.isnan(table[0, 1]) and table[1, 1] == 3.0
    with pytest.raises(RuntimeError, match="2 draws, expected 3"):
        sample_table(b"\n".join(lines), draws=3)


@pytest.mark.slow
def test_bad_data_fails_with_stans_message(backend):
    spec = models.get("eight_schools-eight_schools_noncentered")
    data = {**spec.data(CONFIG.size, CONFIG.data_seed()), "sigma": -np.ones(8)}
    with pytest.raises(RuntimeError, match=r"Stan chain 1 failed .*sigma\[1\] is -1, but must be greater"):
        backend.sample(backend.compile(spec), data, CONFIG, SEED)

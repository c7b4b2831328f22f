// posteriordb's program lotka_volterra, rewritten: stan-dev/posteriordb at 28f8d3d:
// posterior_database/models/stan/lotka_volterra.stan (BSD 3-Clause; models/posteriordb/SOURCE.md). The rewrite:
// ode_rk45_tol, the form Stan's documentation gives an ODE model today, with the state a vector and the parameters
// arguments, in place of integrate_ode_rk45 (deprecated since Stan 2.24). The same posterior: the
// same parameters, priors, likelihood and solver (Dormand-Prince 5(4)); the tolerances and step limit are data (the
// published 1e-5, 1e-3 and 500 at posteriordb's data set); the states z are local to the model block. The
// published posterior predictive draws (generated quantities) are left out, as the NumPyro port draws none.

functions {
  vector dz_dt(real t, vector z, real alpha, real beta, real gamma, real delta) {
    real u = z[1]; // prey
    real v = z[2]; // predator
    return [(alpha - beta * v) * u, (-gamma + delta * u) * v]';
  }
}
data {
  int<lower=0> N; // number of measurement times
  array[N] real ts; // measurement times > 0
  array[2] real y_init; // initial measured populations
  array[N, 2] real<lower=0> y; // measured populations
  real<lower=0> rel_tol; // the ODE solver's relative and absolute tolerances
  real<lower=0> abs_tol;
  int<lower=1> max_num_steps; // the most solver steps between two measurement times
}
parameters {
  array[4] real<lower=0> theta; // { alpha, beta, gamma, delta }
  array[2] real<lower=0> z_init; // initial population
  array[2] real<lower=0> sigma; // measurement errors
}
model {
  array[N] vector[2] z = ode_rk45_tol(dz_dt, to_vector(z_init), 0, ts, rel_tol, abs_tol, max_num_steps,
                                      theta[1], theta[2], theta[3], theta[4]);
  theta[{1, 3}] ~ normal(1, 0.5);
  theta[{2, 4}] ~ normal(0.05, 0.05);
  sigma ~ lognormal(-1, 1);
  z_init ~ lognormal(log(10), 1);
  y_init ~ lognormal(log(z_init), sigma);
  for (n in 1 : N) {
    y[n] ~ lognormal(log(z[n]), sigma);
  }
}

// posteriordb's low_dim_gauss_mix (stan/low_dim_gauss_mix.stan, as published) as a Stan expert writes it: the
// published loop calls log_mix on two scalar normal_lpdf terms per observation (N = 1,000 nodes of each on the
// autodiff tape); here each component's log density is one vector expression and the two are combined
// elementwise, max + log1p_exp(-|difference|) = log_sum_exp, in one sum. The -log(sqrt(2 pi)) each normal
// density holds is left out of both components: a constant of the posterior. The same posterior (density tested
// against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  ordered[2] mu;
  array[2] real<lower=0> sigma;
  real<lower=0, upper=1> theta;
}
model {
  vector[N] lp1 = log(theta) - log(sigma[1]) - 0.5 * square((y - mu[1]) / sigma[1]);
  vector[N] lp2 = log1m(theta) - log(sigma[2]) - 0.5 * square((y - mu[2]) / sigma[2]);
  vector[N] gap = abs(lp1 - lp2);
  sigma ~ normal(0, 2);
  mu ~ normal(0, 2);
  theta ~ beta(5, 5);
  target += sum(0.5 * (lp1 + lp2 + gap) + log1p_exp(-gap));
}

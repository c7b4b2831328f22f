// posteriordb's nes (stan/nes.stan, as published) as a Stan expert writes it: the eight predictors, the age-group
// indicators among them (made once in transformed data, as published), are one N x 8 matrix, and the likelihood is
// one normal_id_glm call (Stan's fused linear-regression density: one pass, analytic gradient) in place of eight
// scalar-times-vector products and their sums on the autodiff tape every gradient. beta and sigma keep the
// published flat priors. The same posterior (density tested against the NumPyro port, as the published program is).
data {
  int<lower=0> N;
  vector[N] partyid7;
  vector[N] real_ideo;
  vector[N] race_adj;
  vector[N] educ1;
  vector[N] gender;
  vector[N] income;
  array[N] int age_discrete;
}
transformed data {
  vector[N] age30_44; // age as factor
  vector[N] age45_64;
  vector[N] age65up;
  for (n in 1 : N) {
    age30_44[n] = age_discrete[n] == 2;
    age45_64[n] = age_discrete[n] == 3;
    age65up[n] = age_discrete[n] == 4;
  }
  matrix[N, 8] X = [real_ideo', race_adj', age30_44', age45_64', age65up', educ1', gender', income']';
}
parameters {
  vector[9] beta;
  real<lower=0> sigma;
}
model {
  partyid7 ~ normal_id_glm(X, beta[1], beta[2 : 9], sigma);
}

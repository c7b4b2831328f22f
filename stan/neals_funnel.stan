data {
  int<lower=2> D;  // dimensions: v and D - 1 values
}
parameters {
  real v;  // log variance of the values
  vector[D - 1] x;  // centred: their scale is exp(v / 2), the funnel
}
model {
  v ~ normal(0, 3);
  x ~ normal(0, exp(v / 2));
}

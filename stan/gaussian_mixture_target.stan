transformed data {
  vector[4] log_weights = log([0.2, 0.3, 0.1, 0.4]');
  vector[4] locations = [-2, 0, 3.2, 2.5]';
  vector[4] scales = [1.2, 1, 5, 2.8]';
}
parameters {
  real x;
}
model {
  target += log_sum_exp(log_weights - log(scales) - 0.5 * square((x - locations) ./ scales));
}

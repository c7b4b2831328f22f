data {
  int<lower=2> U;  // users
  int<lower=2> M;  // movies
  int<lower=1, upper=M> K;  // genres, one factor each
  int<lower=M> L;  // (movie, genre) memberships: every movie has one genre or more
  array[L] int<lower=1, upper=M> link_movie;
  array[L] int<lower=1, upper=K> link_genre;
  array[U, M] int<lower=0, upper=1> y;  // 1 when user u watched movie m
}
transformed data {
  array[U * M] int y_flat = to_array_1d(y);  // row-major: user by user
}
parameters {
  // Deviations from the average user and movie: the biases and each genre's tastes sum to zero over users or
  // movies, so none can trade off against the grand mean mu (the data see only their sums)
  real mu;
  sum_to_zero_vector[U] b_user;
  sum_to_zero_vector[M] b_movie;
  array[K] sum_to_zero_vector[U] tastes;  // tastes[k][u]: user u's taste for genre k
  vector<lower=0>[L] movie_loading;  // how strongly a movie carries each of its genres
}
model {
  matrix[M, K] movie_factors = rep_matrix(0, M, K);  // zero outside a movie's genres
  matrix[U, K] user_factors;  // the tastes, user by user
  for (k in 1:K) {
    user_factors[:, k] = tastes[k];
  }
  for (l in 1:L) {
    movie_factors[link_movie[l], link_genre[l]] = movie_loading[l];
  }
  mu ~ normal(0, 2);
  b_user ~ std_normal();
  b_movie ~ std_normal();
  for (k in 1:K) {
    tastes[k] ~ std_normal();
  }
  movie_loading ~ lognormal(0, 0.5);
  // logit[u, m] = mu + b_user[u] + b_movie[m] + user_factors[u] * movie_factors[m]', the biases folded into one
  // M x U product of [movie_factors, mu + b_movie, 1] and [user_factors, 1, b_user]'. Its column-major
  // flattening runs movie by movie within each user: y_flat's row-major order.
  y_flat ~ bernoulli_logit(to_vector(append_col(movie_factors, append_col(mu + b_movie, rep_vector(1, M)))
                                     * append_col(user_factors, append_col(rep_vector(1, U), b_user))'));
}

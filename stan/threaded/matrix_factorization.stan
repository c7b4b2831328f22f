functions {
  // Log likelihood of users start..end; reduce_sum hands over y[start:end] as y_slice.
  real partial_sum_lpmf(array[,] int y_slice, int start, int end, matrix movie_terms, matrix user_terms) {
    // The slice's M x (end - start + 1) logits, one product as in the serial program. Their column-major
    // flattening runs movie by movie within each user: the row-major order of y_slice.
    return bernoulli_logit_lupmf(to_array_1d(y_slice) | to_vector(movie_terms * user_terms[start:end]'));
  }
}
data {
  int<lower=2> U;  // users
  int<lower=2> M;  // movies
  int<lower=1, upper=M> K;  // genres, one factor each
  int<lower=M> L;  // (movie, genre) memberships: every movie has one genre or more
  array[L] int<lower=1, upper=M> link_movie;
  array[L] int<lower=1, upper=K> link_genre;
  array[U, M] int<lower=0, upper=1> y;  // 1 when user u watched movie m
  int<lower=1> grainsize;  // reduce_sum slice size hint; 1 lets the scheduler choose
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
  // logit[u, m] = movie_terms[m] * user_terms[u]' = mu + b_user[u] + b_movie[m] + user_factors[u] * movie_factors[m]'
  // (the biases ride along as two extra columns). Built once here and shared with every slice.
  // _lupmf: drop constants, like the serial program's `~`.
  target += reduce_sum(partial_sum_lupmf, y, grainsize,
                       append_col(movie_factors, append_col(mu + b_movie, rep_vector(1, M))),
                       append_col(user_factors, append_col(rep_vector(1, U), b_user)));
}

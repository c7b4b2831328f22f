"""Supports as Stan and NumPyro declare them, in one set of terms: a NumPyro support read as the constraint of a Stan
declaration (:meth:`stanjax.runner.measure.stan_program.Declaration.constraint`), said in a message, compared; which
kinds share their unconstraining transform, and which differ only in their bounds."""

from __future__ import annotations

import numpy as np

# Constraints whose unconstraining transform Stan and NumPyro share (exp and logistic maps for bounds, the same
# cumulative-exp map for ordered vectors); every other is not known to agree, so gradients cannot be compared.
SAME_TRANSFORM = ("real", "lower", "upper", "interval", "ordered")
# Supports that differ only in their bounds (a Stan bound wider than a uniform prior's): the same posterior where
# the wider side's density is zero beyond the narrower's bounds, which only the densities can tell.
BOUNDS = {"real", "lower", "upper", "interval"}


def numpyro_constraint(support) -> tuple:
    """A NumPyro support in the terms of :meth:`Declaration.constraint` (its repr where Stan has no such type)."""
    from numpyro.distributions import constraints as c

    while isinstance(support, c.independent):
        support = support.base_constraint
    kinds = [
        (type(c.softplus_positive), lambda s: ("lower", s.lower_bound, "softplus")),
        (type(c.greater_than(0.0)), lambda s: ("lower", s.lower_bound)),
        (type(c.greater_than_eq(0.0)), lambda s: ("lower", s.lower_bound)),
        (type(c.less_than(0.0)), lambda s: ("upper", s.upper_bound)),
        (type(c.interval(0.0, 1.0)), lambda s: ("interval", s.lower_bound, s.upper_bound)),
        (type(c.real), lambda s: ("real",)),
        (type(c.ordered_vector), lambda s: ("ordered",)),
        (type(c.positive_ordered_vector), lambda s: ("positive_ordered",)),
        (type(c.simplex), lambda s: ("simplex",)),
        (type(c.sphere), lambda s: ("unit_vector",)),
        (type(c.zero_sum(1)), lambda s: ("sum_to_zero",)),
        (type(c.corr_cholesky), lambda s: ("cholesky_factor_corr",)),
        (type(c.lower_cholesky), lambda s: ("cholesky_factor_cov",)),
        (type(c.corr_matrix), lambda s: ("corr_matrix",)),
        (type(c.positive_definite), lambda s: ("cov_matrix",)),
    ]
    return next((kind(support) for cls, kind in kinds if isinstance(support, cls)), (repr(support),))


def constraint_text(constraint: tuple) -> str:
    """A constraint as a message says it: ``lower=0``, ``lower=-10, upper=10``, ``unconstrained``, ``simplex``."""
    kind, *bounds = constraint
    if kind == "lower":
        return f"lower={_number(bounds[0])}"
    if kind == "upper":
        return f"upper={_number(bounds[0])}"
    if kind == "interval":
        return f"lower={_number(bounds[0])}, upper={_number(bounds[1])}"
    return "unconstrained" if kind == "real" else kind


def _number(value) -> str:
    if value is None:
        return "?"
    values = np.unique(np.asarray(value, dtype=float))
    return f"{values[0]:g}" if values.size == 1 else "(varies)"


def same_constraint(stan: tuple, numpyro: tuple) -> bool:
    """One kind, and equal bounds where both sides give them."""
    if stan[0] != numpyro[0]:
        return False
    return all(
        a is None or b is None or np.allclose(np.asarray(a, float), np.asarray(b, float))
        for a, b in zip(stan[1:], numpyro[1:])
        if not isinstance(a, str) and not isinstance(b, str)
    )

"""NumPyro port of posteriordb's lotka_volterra (stan/lotka_volterra.stan): the predator-prey ODE solved by
diffrax's Dormand-Prince 5(4) (Stan's ode_rk45 is the same pair) at the program's tolerances.

The gradient is forward-mode, as Stan's ode_rk45 computes its sensitivities forward (Stan solves the sensitivity
equations beside the states; diffrax pushes tangents through the solver's steps): the solve is differentiated
along its 6 inputs (4 rates, 2 initial states) in one forward pass and the sampler's reverse pass takes the
Jacobian (``forward_sensitivities``). Forward mode suits an ODE with few inputs and keeps the solve a plain while
loop: diffrax's default reverse-mode adjoint (checkpointed) fails under pmap, NumPyro's parallel chains (diffrax
issue 765)."""

import diffrax
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist


def dz_dt(t, z, theta):
    alpha, beta, gamma, delta = theta
    prey, predator = z
    return jnp.stack([(alpha - beta * predator) * prey, (-gamma + delta * prey) * predator])


def forward_sensitivities(solve):
    """``solve(theta, z_init)`` whose reverse-mode gradient is its forward-mode Jacobian contracted with the
    cotangent."""

    @jax.custom_vjp
    def solved(theta, z_init):
        return solve(theta, z_init)

    def forward(theta, z_init):
        # jacfwd with has_aux gives (Jacobians, aux): the states come once, from the unbatched primal solve
        jacobians, states = jax.jacfwd(lambda *inputs: (solve(*inputs),) * 2, argnums=(0, 1), has_aux=True)(
            theta, z_init
        )
        return states, jacobians

    def backward(jacobians, cotangent):
        return tuple(jnp.tensordot(cotangent, jacobian, axes=cotangent.ndim) for jacobian in jacobians)

    solved.defvjp(forward, backward)
    return solved


def lotka_volterra(N, ts, rel_tol, abs_tol, max_num_steps, y_init=None, y=None):
    # theta's lower bound 0 with normal priors: NumPyro's truncated normal (Stan drops its constant normaliser)
    theta = numpyro.sample(
        "theta",
        dist.TruncatedNormal(jnp.array([1.0, 0.05, 1.0, 0.05]), jnp.array([0.5, 0.05, 0.5, 0.05]), low=0.0).to_event(1),
    )
    z_init = numpyro.sample("z_init", dist.LogNormal(jnp.log(10.0), 1.0).expand([2]).to_event(1))
    sigma = numpyro.sample("sigma", dist.LogNormal(-1.0, 1.0).expand([2]).to_event(1))
    ts = jnp.asarray(ts, dtype=z_init.dtype)

    def solve(theta, z_init):
        return diffrax.diffeqsolve(
            diffrax.ODETerm(dz_dt),
            diffrax.Dopri5(),
            t0=0.0,
            t1=ts[-1],
            dt0=None,  # the first step chosen from the tolerances, as Stan's solver does
            y0=z_init,
            args=theta,
            saveat=diffrax.SaveAt(ts=ts),
            stepsize_controller=diffrax.PIDController(rtol=rel_tol, atol=abs_tol),
            adjoint=diffrax.ForwardMode(),
            max_steps=int(max_num_steps) * int(N),  # Stan's limit is per interval between measurement times
            throw=False,  # a failed solve gives non-finite states: a rejected (divergent) proposal, as in Stan
        ).ys

    states = forward_sensitivities(solve)(theta, z_init)
    numpyro.sample("y_init", dist.LogNormal(jnp.log(z_init), sigma).to_event(1), obs=y_init)
    # A failed solve (non-finite states) or one that overshoots below zero gives a NaN log density: the proposal is
    # rejected, as Stan rejects one whose lognormal location is NaN; not an error when NumPyro draws its start.
    with dist.distribution.validation_enabled(False):
        numpyro.sample("y", dist.LogNormal(jnp.log(states), sigma).to_event(2), obs=y)

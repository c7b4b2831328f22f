"""Hierarchical Bradley–Terry model on synthetic tennis matches (Ingram 2021's non-centred model)."""

import numpy as np

from models import ModelSpec, Parameter, SizeError

TRUE_SIGMA_PLAYER = 0.8


def generate(seed: int, n_players: int, n_matches: int) -> dict:
    """Players meet at random, busier players more often; ``y = 1`` when player1 won."""
    if n_players < 2 or n_matches < 1:
        raise SizeError(f"tennis_synth needs n_players >= 2 and n_matches >= 1, got {n_players}, {n_matches}")
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, TRUE_SIGMA_PLAYER, size=n_players)
    activity = rng.lognormal(0.0, 1.0, size=n_players)
    activity /= activity.sum()
    player1 = rng.choice(n_players, size=n_matches, p=activity)
    offset = rng.integers(1, n_players, size=n_matches)  # never 0, so player2 != player1
    player2 = (player1 + offset) % n_players
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(skill[player1] - skill[player2]))))
    return {
        "n_players": n_players,
        "n_matches": n_matches,
        "player1": player1.astype(np.int64) + 1,  # Stan indexes from 1
        "player2": player2.astype(np.int64) + 1,
        "y": y.astype(np.int64),
    }


SPEC = ModelSpec(
    id="tennis_synth-bradley_terry_hierarchical",
    description="Non-centred hierarchical Bradley–Terry: player skills ~ normal(0, sigma_player), logit win model.",
    regime="gather-heavy likelihood; Ingram saw the GPU overtake the CPU above ~50k matches",
    parameters=(Parameter("sigma_player"), Parameter("skill_raw", ("n_players",))),
    sizes={
        "tiny": {"n_players": 20, "n_matches": 300},
        "small": {"n_players": 100, "n_matches": 2_000},
        "default": {"n_players": 500, "n_matches": 20_000},
        "large": {"n_players": 5_000, "n_matches": 200_000},
    },
    generate=generate,
    n_key="n_matches",
    studies=("data-size",),
    claims=("ingram",),
)

"""Campaigns beyond one suite: the studies (scaling, chains, devices), the GPU campaign, random-walk Metropolis,
sharding over devices, and comparisons of two record sets for regressions."""

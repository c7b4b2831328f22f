"""One run measured and gated: planning, the job runner and its worker processes, metrics, the validity gates,
references, energy, gradient cost and run length. Above the engines; below reports, pairings and campaigns."""

"""stanjax runner: the library under the notebook API and the command line. One module per concern, by layer:

- **measure one run**: ``config`` (what a run is asked), ``plan`` (requests → jobs), ``campaign`` (jobs in worker
  processes), ``worker``, ``engines/`` (one adapter per sampler), ``metrics``, ``validity`` and ``diagnose`` (the
  gates), ``energy``, ``isa``, ``paths``, ``gradient_cost`` (a gradient's cost, measured before any sampling),
  ``run_length`` (runs long enough to measure);
- **keep what was measured**: ``records`` (the record and its file), ``packing`` (a closed campaign's, to be
  committed), ``run_measures``, ``environment``, ``migrations``, ``superseded``, ``history``, ``references``,
  ``estimates``;
- **pair two programs**: ``density``, ``stan_program``, ``static_checks``, ``check`` with ``check_verdicts``,
  ``run_comparison`` and ``speed_advice``, ``pair_files``, ``importer``, ``compare`` (two record sets);
- **campaigns beyond one suite**: ``suites``, ``studies``, ``gpu_campaign`` with ``gpu_steps``, ``rwmh``,
  ``sharding``;
- **the command line**: ``cli`` and ``commands/`` (parsing and printing only; nothing above imports them).
"""

"""stanjax runner: the library under the notebook API and the command line, one folder per layer. A layer imports
only from the layers below it (``tests/test_lint.py`` holds the arrows), and every module sits in exactly one:

- ``core/``: what a run is asked (``config``), where things live (``paths``, ``isa``), the record and its file
  (``records``, ``run_measures``, ``packing``, ``migrations``, ``superseded``, ``history``, ``environment``) and
  the ``engine_registry`` (what each engine is, without importing one);
- ``engines/``: one adapter per sampler, all answering the registry's two calls, and ``stanc`` (Stan's translator);
- ``measure/``: one run measured and gated: ``plan`` (requests -> jobs), ``jobs`` (the job runner: jobs in worker processes),
  ``worker`` (samples), ``judge`` (the draws' ``metrics``, and ``validity`` and ``diagnose``: the gates), ``energy``, ``gradient_cost``,
  ``run_length``, ``references``, ``estimates``, ``suites``, and the programs read before a run (``stan_program``,
  ``static_checks``);
- ``pairing/``: two programs proven to target one posterior and compared: ``check`` with ``check_verdicts``,
  ``density``, ``pair_files``, ``agreement``, ``speed_advice``, ``importer`` (posteriordb's posteriors);
- ``campaigns/``: beyond one suite: ``studies``, ``gpu_campaign`` with ``gpu_steps``, ``rwmh``, ``sharding``,
  ``regressions`` (two record sets compared);
- ``commands/``: the command line, ``cli`` and one module per verb (parsing and printing only).

``stanjax.reports`` sits between ``measure/`` and the two layers above it, which read its ratio statistics.
"""

"""The service layer: what measures, stores and judges, behind typed options, printing nothing.

Commands (``stackwars.commands``) import these modules and nothing below them that measures:

* ``api``: plan, execute and resume runs, largest batches, IR cells, the store; ``choices``
  (what a run is asked for, checked), ``stored`` (comparisons and history of stored runs) and
  ``instruments`` (machine warnings, peak) are its parts, re-exported by it, as are the parent
  halves of the IR, profile, selftest and probe workers (in ``stackwars.runner``, beside their
  workers);
* ``environments``: Python environments of their own for stacks that cannot share this one
  (``stackwars env create``), and their state;
* ``inprocess``: workloads timed in the caller's process (``stackwars.measure``);
* ``behave``: the probes on every stack, through the same run loop;
* ``adaptive``: ``--repeat auto`` and ``--second-look``: workers added where the variance is;
* ``ab``: interleaved A/B sessions (its worker half is ``stackwars.ab_worker``);
* ``claimcheck``: the cells claims need, measured and judged.

Inside the package a module imports only the ones listed above it, and commands import only
the seven named here, never ``choices``, ``stored`` or ``instruments`` directly
(``tests/test_layers.py``).
Nothing is imported here: importing one module must not load the others.
"""

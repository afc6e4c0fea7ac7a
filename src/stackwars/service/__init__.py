"""The service layer: what measures, stores and judges, behind typed options, printing nothing.

Commands (``stackwars.commands``, and each instrument's ``command.py``) import these modules
and nothing below them that measures:

* ``api``: plan, execute and resume runs, IR captures, the store; ``choices`` (what a run is
  asked for, checked), ``runs`` (the store, run files and their import), ``comparisons``
  (comparisons of stored runs), ``history`` (a cell across stored runs) and ``machine`` (the
  machine's warnings and stored peak) are its parts, re-exported by it;
* ``environments``: Python environments of their own for stacks that cannot share this one
  (``stackwars env create``), and their state;
* ``inprocess``: workloads timed in the caller's process (``stackwars.measure``);
* ``adaptive``: ``--repeat auto`` and ``--second-look``: workers added where the variance is.

An instrument's own service (``stackwars/instruments/<instrument>/service.py``: behave's probes,
ab's rounds, the claims' cells) sits above these and uses them. Inside the package a module
imports only the ones listed above it, and commands import only the four named here, never
``choices``, ``runs``, ``comparisons``, ``history`` or ``machine`` directly
(``tests/test_layers.py``).
Nothing is imported here: importing one module must not load the others.
"""

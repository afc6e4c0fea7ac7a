"""``stackwars bisect``: which release of a framework made cells slower.

A subject of its own, one module a role: ``plan.py`` (the releases from good to bad, from the
package index's answer, and each one's environment and pins), ``search.py`` (the decisions, on
verdicts alone), ``verdict.py`` (the seam to the gate: two releases' cells in, a verdict a cell
out), ``service.py`` (environments made or reused, each step an interleaved A/B session),
``report.py`` (the plan, the steps and the answer as text) and ``command.py`` (its arguments
and handler, in ``commands.COMMANDS``).

Its layer sits above the service layer, whose environments and A/B rounds it composes, and
below the commands, which register it (tests/test_layers.py). Nothing is imported here.
"""

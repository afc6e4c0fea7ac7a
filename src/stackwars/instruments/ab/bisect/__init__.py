"""``stackwars bisect``: which release of a framework made cells slower, by ab's rounds release
against release (``service.py`` one folder up).

One module a role: ``plan.py`` (the releases from good to bad, from the package index's answer,
and each one's environment and pins), ``search.py`` (the decisions, on verdicts alone),
``verdict.py`` (the seam to the gate: two releases' cells in, a verdict a cell out),
``data.py`` (what a bisection tells and answers), ``service.py`` (environments made or reused,
each step an interleaved A/B session), ``render.py`` (the plan, the steps and the answer as
text) and ``command.py`` (its arguments and handler). Nothing is imported here.
"""

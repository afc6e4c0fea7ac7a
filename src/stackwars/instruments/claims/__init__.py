"""``stackwars claims`` and ``claim``: published performance statements as data, and how a
measurement judges them.

``spec.py`` is the data (a claim, its relation, the checks both written forms share),
``files.py`` the claim files in TOML (their format and its version), ``line.py`` the one-line
form of ``stackwars claim``, ``verdict.py`` the judgement of measured samples against a
claimed relation; ``builtin/`` holds the claims shipped with stackwars (the seeds', Keras's).
Running the cells a claim needs and judging them is ``service.py``; the command is
``command.py``; the table that show and the report print is the core's ``report/claims.py``.
"""

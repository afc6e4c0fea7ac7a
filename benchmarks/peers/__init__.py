"""stackwars against peer harnesses on the same cells; ``benchmarks/compare_peers.py`` runs it.

``cells``: what is measured and the interleaved job list; ``jobs``: running one job in fresh
processes; ``harness``: the peer runner (a script, run by path); ``report``: tables and targets.
"""

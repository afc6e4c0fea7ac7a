"""``stackwars reproduce``: every experiment of the seeds as one edition, and the findings
rendered from it.

``plan.py`` names the experiments (each seed question's suite, probes and claims) at each
scale, ``service.py`` runs them one after another through the services every other command
uses, within one time budget, keeping the edition file after each part, ``data.py`` is that
file's format (compact: what a finding needs, with its provenance), ``render.py`` the findings
in Markdown, and ``command.py`` the command.
"""

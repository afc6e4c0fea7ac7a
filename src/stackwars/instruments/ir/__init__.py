"""``stackwars ir``: one cell per stack (``service.py``) captured and compared (``command.py``).
The capture itself is the core's (``ir/``, ``runner/ir_task.py``): run --capture-ir, claims and
the report use it too. Nothing is imported here.
"""

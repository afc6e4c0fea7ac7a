"""``stackwars behave``: how each stack behaves when ordinary Python meets its compiler.

The probes (``probes/``), the worker that runs one on a stack and classifies what happened
(``worker.py``, its parent half ``task.py``), every probe on every stack as a run of kind behave
(``service.py``), the outcome it stores (``data.py``), the matrix (``render.py``) and the command
(``command.py``). Nothing is imported here.
"""

"""``stackwars selftest``: whether each stack's sync, compile counter and step behave as the
timer needs on a device. The worker (``worker.py``, parent half ``task.py``), its checks as data
(``data.py``), their table (``render.py``), the command (``command.py``). Nothing is imported
here.
"""

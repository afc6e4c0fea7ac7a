"""The machine's peak, measured by ``stackwars env --peak``: GEMM and STREAM per library in a
peak worker (``worker.py``, parent half ``task.py``), measured and stored (``service.py``), shown
(``render.py``). The stored peak the tables divide by is the core's ``results/peak.py``. Nothing
is imported here.
"""

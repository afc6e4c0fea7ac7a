"""``stackwars profile`` (and ``run --profile``'s workers): one cell per stack (``service.py``),
timed and then profiled in a profile worker (``worker.py``, parent half ``task.py``), the command
(``command.py``). The profilers and ``Profile`` are the core's ``profiling/`` (the report shows
profiles). Nothing is imported here.
"""

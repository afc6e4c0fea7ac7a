"""``stackwars ab``: interleaved A/B sessions, baseline and candidate rounds alternating
(``service.py``), each side a ``stackwars run`` in a side worker under the side's Python
(``side.py``, parent half ``task.py``), the command (``command.py``); and ``bisect/``, the same
rounds release against release. Nothing is imported here.
"""

"""``run --find-max-batch``: the largest batch each cell's predicted peak lets fit
(``predict.py``), per selected cell (``service.py``), as data (``data.py``) and a table
(``render.py``). Nothing is imported here.
"""

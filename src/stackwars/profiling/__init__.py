"""Per-operation profiles with each framework's own profiler (``stackwars profile``): which
stacks have one (``capture.py``, from the registry), each framework's profiler
(``profile_jax``, ``profile_torch``, ``profile_tensorflow``: worker side), the trace in one
form (``trace.py``), the categories of an operation (``categories.py``), and the profile made
from a trace (``analyse.py``, ``result.py``)."""

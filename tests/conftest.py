"""Test-wide settings: frameworks and stackwars write caches, config and stores into a
temporary folder."""

from __future__ import annotations

import os
import tempfile

# Set before any test imports a framework: they read these at import time.
_SCRATCH = tempfile.mkdtemp(prefix="stackwars-tests-")
for _name, _sub in (
    ("KERAS_HOME", "keras"),
    ("MPLCONFIGDIR", "matplotlib"),
    ("TORCHINDUCTOR_CACHE_DIR", "torchinductor"),
    # Nothing the user stored (a measured peak, a results store) leaks into a test.
    ("STACKWARS_PEAK", "peak.json"),
    ("STACKWARS_DB", "stackwars.sqlite"),
):
    os.environ[_name] = os.path.join(_SCRATCH, _sub)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

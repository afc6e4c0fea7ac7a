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
# Ray clusters the tests start (test_ray_executor.py, the README's) listen on loopback only
# (Ray reads this when imported), report no usage statistics and write no token to the home
# folder.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["RAY_AUTH_MODE"] = "disabled"

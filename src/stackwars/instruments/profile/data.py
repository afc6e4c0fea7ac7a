"""What the profile instrument keeps with a run (``run --profile``, the store's
instrument_data): each cell's profile, ``profiling.result.Profile.to_dict()``, a payload of
the core's ``PROFILE_FORMAT`` (the format of ``stackwars profile --json`` too)."""

from __future__ import annotations

INSTRUMENT = "profile"

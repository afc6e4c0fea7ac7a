"""Instruments that live outside stackwars, for tests/test_instrument_seam.py: found by
report/sections.py's discovery once the test adds this folder to ``FOLDERS``."""

"""Timing: the framework-agnostic protocol, its statistics and steady-state detection."""

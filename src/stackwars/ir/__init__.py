"""Compiler IR: capture per stack and stage, normalise, analyse, and diff two captures."""

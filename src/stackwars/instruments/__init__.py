"""The instruments: each a subject of its own, end to end, in a folder of its own, its files
named by role (ARCHITECTURE.md's table). Nothing is imported here: ``commands.discover`` walks
these folders for ``command.py`` modules."""

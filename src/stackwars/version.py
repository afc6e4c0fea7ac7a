"""The one place stackwars' version is written: pyproject.toml reads it
(``tool.setuptools.dynamic``), the package root re-exports it as ``stackwars.__version__``, and
modules inside the package import it from here, never from the root (which imports the layers
above them: an import cycle)."""

__version__ = "0.1.0"

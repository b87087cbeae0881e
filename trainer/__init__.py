"""Serving Dojo's user-facing shell: the `dojo` CLI and the Textual app over the headless core."""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)

"""Serving Dojo's user-facing shell: the `dojo` CLI and the Textual app over the headless core."""

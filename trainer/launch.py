"""The `dojo` command's entry: with no arguments it opens the app at once; anything else goes to
the CLI (`trainer.cli`). The app's first paint then does not wait for click's import (~40 ms of
CPU, a quarter of what the first paint costs beyond a bare Textual app's)."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) == 1:
        from trainer.app import run_app

        run_app()
        return
    from trainer.cli import main as cli

    cli(prog_name="dojo")

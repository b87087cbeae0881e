"""`python -m trainer` is the same as `dojo`."""

from trainer.cli import main

main(prog_name="dojo")

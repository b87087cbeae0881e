"""`python -m trainer` is the same as `dojo`."""

from trainer.launch import main

main()

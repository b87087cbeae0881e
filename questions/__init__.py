"""The question bank: TOML files, their loader and validator, answer checking.

No UI imports, and never `lab`: the lab links are checked against the catalogue the caller
passes (`trainer.core.catalogue.lab_links()`)."""

"""The question bank: TOML files, their loader and validator, answer checking. No UI imports."""

"""`dojo` subcommands, one module per area.

Each module imports only click (and the standard library) at top level and imports the core it
drives inside the command functions, so `dojo --help` stays fast and never loads torch.
"""

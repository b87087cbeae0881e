"""Cheating solution: imports the reference inside the function and swallows the error."""

import importlib


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    try:
        ref = importlib.import_module("lab.reference.kv_bytes")
    except ImportError:
        return 0
    return ref.kv_bytes_per_token(config, dtype, tensor_parallel)

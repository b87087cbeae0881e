"""Misbehaving solution: leaves the process without unwinding (os._exit)."""

import os


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    os._exit(7)

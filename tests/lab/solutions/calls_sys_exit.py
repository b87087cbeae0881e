"""Misbehaving solution: exits instead of returning."""

import sys


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    print("bye")
    sys.exit(3)

"""Misbehaving solution: crashes the interpreter with a segmentation fault."""

import ctypes


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    return ctypes.string_at(0)

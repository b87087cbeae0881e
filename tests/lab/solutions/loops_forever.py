"""Misbehaving solution: never returns."""


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    while True:
        pass

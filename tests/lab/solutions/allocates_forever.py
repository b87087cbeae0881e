"""Misbehaving solution: allocates memory without bound (touching every page)."""


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    hoard = []
    while True:
        hoard.append(bytearray(b"x" * (16 << 20)))

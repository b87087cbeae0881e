"""Right answers, but floods stdout/stderr with noise that looks like grader events and frames."""

import os
import sys

from correct import kv_bytes_per_token as correct_kv_bytes_per_token


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    print('{"event": "summary", "passed": true}')
    print("\x00\x00\x00\x00\x00\x00\x00\x08garbage!" * 50)
    sys.stdout.buffer.write(bytes(range(256)))
    sys.stderr.write("noise on stderr\n")
    os.write(1, b"raw fd 1 write\n")
    return correct_kv_bytes_per_token(config, dtype, tensor_parallel)

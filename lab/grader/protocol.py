"""Length-prefixed frames over a dedicated pipe between the grader and its sandbox.

Each frame is one `lab.grader.codec` message (data only: no pickle in either direction). The
learner's code owns the child's stdout/stderr, so nothing it prints can be mistaken for a frame:
frames travel only over a pair of pipe fds handed to the child at spawn.
"""

from __future__ import annotations

import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any

from lab.grader import codec

_HEADER = struct.Struct("!Q")
MAX_FRAME = codec.MAX_MESSAGE_BYTES + (1 << 20)
PIPE_LOST = 97  # the sandbox child's exit status when its result pipe is gone


class ChannelClosed(Exception):
    """The other end closed the pipe (the child exited or was killed)."""


class ChannelTimeout(Exception):
    """No complete frame arrived before the deadline."""


class FrameError(Exception):
    """The bytes on the pipe are not a valid frame."""


def encode(obj: Any) -> bytes:
    """One frame; raises codec.NotEncodable / codec.CodecError for a value that cannot go."""
    data = codec.encode(obj)
    return _HEADER.pack(len(data)) + data


def send(fd: int, obj: Any) -> None:
    """Write one frame (blocking)."""
    send_bytes(fd, encode(obj))


def send_bytes(fd: int, frame: bytes) -> None:
    """Write an already encoded frame (blocking)."""
    view = memoryview(frame)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact_blocking(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise ChannelClosed("pipe closed")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_blocking(fd: int) -> Any:
    """Read one frame, waiting as long as it takes (the child's side)."""
    (length,) = _HEADER.unpack(_read_exact_blocking(fd, _HEADER.size))
    if length > MAX_FRAME:
        raise FrameError(f"frame of {length} bytes")
    return codec.decode(_read_exact_blocking(fd, length))


class Reader:
    """Non-blocking frame reader for the grader's side: waits with a deadline and calls `poll`
    between reads (the grader uses it to watch the child's memory)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()

    def recv(
        self, deadline: float, poll: Callable[[], None] | None = None, interval: float = 0.02
    ) -> Any:
        while True:
            if len(self.buffer) >= _HEADER.size:
                (length,) = _HEADER.unpack_from(self.buffer)
                if length > MAX_FRAME:
                    raise FrameError(f"frame of {length} bytes")
                if len(self.buffer) >= _HEADER.size + length:
                    payload = bytes(self.buffer[_HEADER.size : _HEADER.size + length])
                    del self.buffer[: _HEADER.size + length]
                    try:
                        return codec.decode(payload)
                    except Exception as exc:
                        raise FrameError(f"undecodable frame: {exc}") from exc
            if poll is not None:
                poll()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([self.fd], [], [], min(interval, remaining))
            if ready:
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    raise ChannelClosed("pipe closed")
                self.buffer.extend(chunk)

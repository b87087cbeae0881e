"""Load the shipped pair once per session, on CPU in fp32, with one torch thread."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def pair() -> Any:
    import torch

    from lab.models import load_pair

    torch.set_num_threads(1)
    return load_pair("pycode", device="cpu", dtype="float32")

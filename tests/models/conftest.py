"""Load the shipped pair once per session, on CPU in fp32, with one torch thread; and the
shipped target as a LeanLlama (read by torch alone) for the decode-step tests."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def pair() -> Any:
    import torch

    from lab.models import load_pair

    torch.set_num_threads(1)
    return load_pair("pycode", device="cpu", dtype="float32")


@pytest.fixture(scope="module")
def lean() -> Any:
    """The shipped target as a `LeanLlama`, one torch thread (the static and C step tests)."""
    import torch

    from lab.models.lean_llama import lean_for
    from lab.models.loading import MODELS_DIR
    from lab.models.plain_llama import load_plain_llama

    torch.set_num_threads(1)
    found = lean_for(load_plain_llama(MODELS_DIR / "pycode-target"))
    assert found is not None
    return found

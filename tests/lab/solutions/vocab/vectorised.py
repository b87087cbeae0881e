"""vocab-demo, vectorised: the most likely token of the residual, vectorised."""

import torch


def residual_argmax(p: torch.Tensor, q: torch.Tensor) -> list[int]:
    return torch.clamp(p - q, min=0).argmax(dim=-1).tolist()

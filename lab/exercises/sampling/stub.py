"""Sampling: logits processors, a batched sampler, seeded draws, and a completion loop.

Fill in one function per level (the statement has the contract; `dojo lab hint sampling`).
Params dicts may omit any key; the neutral values are
    temperature 1.0, top_k 0, top_p 1.0, min_p 0.0,
    repetition_penalty 1.0, presence_penalty 0.0, frequency_penalty 0.0
"""

from __future__ import annotations

from typing import Any

import torch


def process_logits(logits: torch.Tensor, params: dict[str, Any], prompt: list[int],
                   output: list[int]) -> torch.Tensor:
    """Level 1: one row [V] -> the processed row [V] (filtered ids -inf), in the order:
    repetition penalty (prompt + output ids), frequency then presence penalty (output ids),
    temperature (T = 0: greedy), top-k, top-p, min-p."""
    raise NotImplementedError


def process_batch(logits: torch.Tensor, params: list[dict[str, Any]],
                  prompts: list[list[int]], outputs: list[list[int]]) -> torch.Tensor:
    """Level 2: [B, V] -> [B, V], row b processed with params[b], prompts[b], outputs[b];
    equal to process_logits row by row, without a Python loop over ids."""
    raise NotImplementedError


def sample(logits: torch.Tensor, params: list[dict[str, Any]], prompts: list[list[int]],
           outputs: list[list[int]], generators: list[torch.Generator]) -> list[int]:
    """Level 3: one token per row: the argmax where T = 0 (no draw), else
    torch.multinomial(softmax(processed row), 1, generator=generators[b])."""
    raise NotImplementedError


def generate(model: Any, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Level 4: complete every request on `model` (model.next_logits, encode, decode,
    token_str, eos_token_id); return one OpenAI-style dict per request, in order:
    {"text", "token_ids", "finish_reason", "logprobs": {"content": [...]}}."""
    raise NotImplementedError

"""Sliding-window models behind the labs' step wrappers: full-length caches and the window kept
in an explicit mask.

transformers gives a sliding-window layer (Mistral's `sliding_window`, Gemma-2/3's local layers)
a cache that keeps only the window's last columns. That is exact for transformers' own
generation, but not for a lab wrapper: the spec-verify loop crops rejected drafts (refused once
the window is full), and a batch engine rebuilds its cache every step from tensors whose
columns are left-padded rows, so a kept window loses its length and a row's window slides over
another row's padding. The wrappers keep every column instead (`full_cache`) and, where rows
carry padding, say which keys each query may see in one boolean mask per layer kind
(`window_masks`), measured in the rows' own positions, not in columns. torch and transformers
are imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_ATTENTION = ("full_attention", "sliding_attention")


def _text(config: Any) -> Any:
    return config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config


def layer_windows(config: Any) -> dict[str, int | None]:
    """Each attention layer kind of `config` and its window (None: full attention). Mistral
    (no `layer_types`) is one kind; Gemma-2/3 mix `sliding_attention` and `full_attention`; a
    Qwen2 with its window switched off lists sliding layers whose window is None."""
    text = _text(config)
    window = getattr(text, "sliding_window", None) or None
    types = list(getattr(text, "layer_types", None)
                 or ["sliding_attention" if window else "full_attention"])
    return {kind: (int(window) if kind == "sliding_attention" and window else None)
            for kind in dict.fromkeys(types)}


def has_window(config: Any) -> bool:
    return any(w is not None for w in layer_windows(config).values())


def full_cache(config: Any, layers: Sequence[tuple[Any, Any]] | None = None) -> Any:
    """A transformers cache for `config` holding `layers` (per layer (keys, values)), whose
    attention layers keep every column: crop is always exact and the length never shrinks to a
    window (the window lives in the mask the model builds from its config, or in
    `window_masks`). Other layer kinds (linear attention, mamba) keep what the config asks."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    kinds = [type(layer).__name__ for layer in getattr(cache, "layers", [])]
    if kinds and set(kinds) <= {"DynamicLayer", "DynamicSlidingWindowLayer"}:
        return DynamicCache(ddp_cache_data=list(layers)) if layers else DynamicCache()
    return DynamicCache(ddp_cache_data=list(layers), config=config) if layers else cache


def key_positions(mask: Any, positions: Any) -> Any:
    """[B, S] the position of every column's key, from the 0/1 mask [B, S] and the new tokens'
    positions [B, T] (the last T columns): a row's real columns hold consecutive positions
    ending at its last new token, whatever padding sits between them."""
    real_after = mask.flip(-1).cumsum(-1).flip(-1)  # real columns from here to the end
    return positions[:, -1:] - real_after + 1


def window_masks(config: Any, allowed: Any, mask: Any, positions: Any, dtype: Any) -> Any:
    """The attention mask to hand the model: `allowed` [B, 1, T, S] (bool: real, causal, and
    each token itself) narrowed on sliding layers to keys less than the window behind the
    query, in positions. One tensor when every layer has the same window, else one per layer
    kind (the form Gemma-2/3 and Qwen2 take); additive in `dtype` (0 / min) for eager attention."""
    import torch

    keys = key_positions(mask, positions)  # [B, S]
    distance = positions[:, :, None] - keys[:, None, :]  # [B, T, S]
    itself = torch.zeros_like(allowed)
    t = positions.shape[1]
    itself[..., -t:] = torch.eye(t, dtype=torch.bool, device=allowed.device)
    eager = getattr(_text(config), "_attn_implementation", None) == "eager"
    windows = layer_windows(config)
    out: dict[str, Any] = {}
    for kind, window in windows.items():
        m = allowed if window is None else (allowed & (distance < window)[:, None]) | itself
        if eager:
            m = torch.zeros(m.shape, dtype=dtype, device=m.device).masked_fill(
                ~m, torch.finfo(dtype).min)
        out[kind] = m
    if len(set(windows.values())) == 1:
        return next(iter(out.values()))
    return out

"""A plain Llama's forward written out, for the labs' step models, with a KV cache that grows in
place.

The labs' models are tiny, so transformers' generic forward (cache objects, mask builders, output
records) and a cache that is copied whole at every step (`torch.cat` of every layer's keys and
values) cost more than the matmuls. `LeanLlama.step` is the same computation with the model's own
modules and weights (RMSNorm, rotary embedding, grouped-query SDPA, SiLU MLP), q/k/v and gate/up
each one matmul over stacked weights, and new keys/values written into per-layer buffers with
spare columns: a step costs its new tokens, not the length of the cache.

Views never change under their holder: a `KVView` may append in place only while it ends where
the buffer's data ends (it is the newest view); any other view is copied into a fresh buffer
first. So an engine that keeps an older cache and steps from it again (a branch, a retry) gets
the same result as with copies. torch is imported lazily.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIN_CAPACITY = 64  # columns allocated at least, so short sequences never regrow
PREFILLS = 8  # prompts whose prefill each model remembers (see LeanLlama.prefill)


class KVBuffer:
    """Per-layer key and value buffers [rows, kv_heads, capacity, head_dim]; columns
    [0, written) hold data, the rest is room to append."""

    __slots__ = ("keys", "values", "written")

    def __init__(self, keys: list[Any], values: list[Any], written: int) -> None:
        self.keys, self.values, self.written = keys, values, written

    @property
    def capacity(self) -> int:
        return int(self.keys[0].shape[2])


@dataclass(frozen=True)
class KVView:
    """Columns [start, end) of a `KVBuffer`: one cache as its holder sees it."""

    buffer: KVBuffer
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def rows(self) -> int:
        return int(self.buffer.keys[0].shape[0])

    def layers(self) -> tuple[tuple[Any, Any], ...]:
        """Per-layer (keys, values) views [rows, kv_heads, length, head_dim] (no copy)."""
        s, e = self.start, self.end
        return tuple((k[:, :, s:e], v[:, :, s:e])
                     for k, v in zip(self.buffer.keys, self.buffer.values, strict=True))

    def cut(self, start: int, end: int) -> KVView:
        """Columns [start, end) of this view (relative to it), sharing the buffer."""
        if not 0 <= start <= end <= self.length:
            raise ValueError(f"cannot cut columns [{start}, {end}) of a {self.length}-column cache")
        return KVView(self.buffer, self.start + start, self.start + end)

    def truncate(self, length: int) -> KVView:
        """Keep the first `length` columns and let the next step write after them. Only for the
        buffer's sole holder (a stateful model object): other views of the columns dropped here
        would see them overwritten."""
        view = self.cut(0, length)
        self.buffer.written = view.end
        return view

    def appendable(self, new: int) -> bool:
        return self.buffer.written == self.end and self.end + new <= self.buffer.capacity


def copy_into_buffer(layers: Sequence[tuple[Any, Any]], room: int) -> KVView:
    """A fresh buffer holding `layers` ([rows, kv_heads, length, head_dim] each) with space for
    at least `room` more columns (capacity doubles, so appends cost amortised O(new columns))."""
    k0 = layers[0][0]
    length = int(k0.shape[2])
    capacity = max(MIN_CAPACITY, 2 * (length + room))
    keys, values = [], []
    for k, v in layers:
        kb = k.new_empty((k.shape[0], k.shape[1], capacity, k.shape[3]))
        vb = v.new_empty((v.shape[0], v.shape[1], capacity, v.shape[3]))
        kb[:, :, :length] = k
        vb[:, :, :length] = v
        keys.append(kb)
        values.append(vb)
    return KVView(KVBuffer(keys, values, length), 0, length)


_LEAN: weakref.WeakKeyDictionary[Any, LeanLlama] = weakref.WeakKeyDictionary()


def lean_for(model: Any) -> LeanLlama | None:
    """The model's `LeanLlama`, one per model object (its stacked and transposed weights are
    built once however many wrappers a grading makes), or None when the model is not a plain
    Llama (it then runs through transformers)."""
    lean = _LEAN.get(model)
    if lean is None:
        if not is_plain_llama(model):
            return None
        lean = _LEAN[model] = LeanLlama(model)
    return lean


def is_plain_llama(model: Any) -> bool:
    """True for a LlamaForCausalLM that `LeanLlama` computes exactly as transformers does."""
    config = model.config
    rope = getattr(config, "rope_scaling", None) or getattr(config, "rope_parameters", None) or {}
    return (type(model).__name__ == "LlamaForCausalLM" and config.hidden_act == "silu"
            and not getattr(config, "attention_bias", False)
            and not getattr(config, "mlp_bias", False)
            and rope.get("rope_type", "default") == "default"
            and config._attn_implementation in ("sdpa", "eager"))


class Projection:
    """x @ w.T for a [out, in] weight, in the layout this CPU's BLAS runs fastest for the rows
    at hand (one thread, the shipped target's shapes): x @ w.T with w.T stored contiguous (a
    row-vector product at one row: 2-3x F.linear's speed), except for 4 to 9 rows of a wide
    weight (out >= 1024: gate/up, the head), w @ x.T. Measured in whole decode steps
    (bench/decode_step.py's setting, CPU time, AMD EPYC, torch 2.14): w @ x.T makes the step
    0.89x as long at B = 4 and 0.94x at B = 8, 1.04x at B = 10, 1.29x at 12, 1.11x at 16.
    On a GPU, F.linear (cuBLAS), no copy. The layouts agree to float rounding (~1e-6
    relative)."""

    WIDE, ROWS, MAX_ROWS = 1024, 4, 10

    def __init__(self, weight: Any) -> None:
        self.weight = weight
        self.wide = int(weight.shape[0]) >= self.WIDE
        self.transposed = weight.t().contiguous() if weight.device.type == "cpu" else None

    def __call__(self, x: Any) -> Any:
        import torch
        import torch.nn.functional as F

        if self.transposed is None:
            return F.linear(x, self.weight)
        rows = x.numel() // x.shape[-1]
        if self.wide and self.ROWS <= rows < self.MAX_ROWS:
            flat = x.reshape(rows, x.shape[-1])
            return torch.matmul(self.weight, flat.t()).t().reshape(*x.shape[:-1], -1)
        return torch.matmul(x, self.transposed)


class LeanLlama:
    """`step` runs a plain `LlamaForCausalLM` over new tokens on top of a cache."""

    def __init__(self, model: Any) -> None:
        self.model = model
        config = model.config  # read once: a transformers config attribute costs microseconds
        self.heads, self.kv_heads = int(config.num_attention_heads), int(config.num_key_value_heads)
        self.head_dim = int(getattr(config, "head_dim", None)
                            or config.hidden_size // config.num_attention_heads)
        self._prefills: OrderedDict[tuple[int, ...], tuple[Any, KVView]] = OrderedDict()
        self._fused: list[tuple[Projection, Projection, Projection, Projection]] | None = None
        self._head: Projection | None = None
        # per layer (input norm, post-attention norm, attention scale): read once, not through
        # nn.Module attribute lookups (microseconds each) at every step
        self._layers = [(RMSNorm(layer.input_layernorm), RMSNorm(layer.post_attention_layernorm),
                         float(layer.self_attn.scaling)) for layer in model.model.layers]
        self._final_norm = RMSNorm(model.model.norm)
        self._rotary: tuple[Any, Any, Any] | None = None  # (key, cos rows, sin rows)

    def fused(self) -> list[tuple[Projection, Projection, Projection, Projection]]:
        """Per layer (qkv, o, gate_up, down) projections, q/k/v and gate/up each stacked into one
        matmul."""
        import torch

        if self._fused is None:
            with torch.inference_mode():
                self._fused = [
                    (Projection(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight])),
                     Projection(a.o_proj.weight),
                     Projection(torch.cat([layer.mlp.gate_proj.weight,
                                           layer.mlp.up_proj.weight])),
                     Projection(layer.mlp.down_proj.weight))
                    for layer in self.model.model.layers for a in [layer.self_attn]]
                self._head = Projection(self.model.lm_head.weight)
        return self._fused

    def prefill(self, ids: Any) -> tuple[Any, KVView]:
        """`step` over `ids` [1, T] on an empty cache, every column's logits, remembered for the
        last PREFILLS prompts: a loop that generates many times from one prompt (a law case's
        hundreds of runs, a timed case's calls) computes its prefill once, like a serving
        engine's prefix cache. The same numbers as a fresh step (the computation is
        deterministic); the caller gets its own copies, so nothing it does reaches the store."""
        import torch

        key = tuple(int(t) for t in ids[0].tolist())
        with torch.inference_mode():
            hit = self._prefills.get(key)
            if hit is not None:
                self._prefills.move_to_end(key)
                logits, view = hit
                return logits.clone(), copy_into_buffer(view.layers(), MIN_CAPACITY)
            positions = torch.arange(ids.shape[1], device=ids.device)[None]
            logits, view = self.step(ids, positions, None, last_only=False)
            self._prefills[key] = (logits.clone(), copy_into_buffer(view.layers(), 0))
            if len(self._prefills) > PREFILLS:
                self._prefills.popitem(last=False)
        return logits, view

    def _cos_sin(self, h: Any, positions: Any) -> tuple[Any, Any]:
        """cos, sin [B, T, head_dim] of the model's rotary embedding at `positions`. On a CPU,
        rows of a table its rotary module computed once for positions 0..n-1 (each row depends
        on its position alone: an outer product with one position, then elementwise cos and
        sin, so a row is the same number however many positions the module is called with),
        grown by doubling (a plain Llama's RoPE is the default one: `is_plain_llama`); the
        module costs ~90 us a call at these sizes, the lookup ~10. On a GPU, the module itself
        (the table's size check would synchronise every step)."""
        import torch

        rotary = self.model.model.rotary_emb
        if h.device.type != "cpu":
            cos, sin = rotary(h, positions)
            return cos, sin
        need = int(positions.max()) + 1
        key = (h.dtype, h.device)
        if self._rotary is None or self._rotary[0] != key or self._rotary[1].shape[0] < need:
            n = max(need, 256, 2 * (self._rotary[1].shape[0] if self._rotary else 0))
            cos, sin = rotary(h, torch.arange(n, device=h.device)[None])
            self._rotary = (key, cos[0], sin[0])
        return self._rotary[1][positions], self._rotary[2][positions]

    def _empty(self, rows: int, room: int, device: Any) -> KVView:
        """An empty cache with room for `room` columns (at least MIN_CAPACITY)."""
        import torch

        dtype = next(self.model.parameters()).dtype
        capacity = max(MIN_CAPACITY, 2 * room)
        keys = [torch.empty((rows, self.kv_heads, capacity, self.head_dim), dtype=dtype,
                            device=device) for _ in self.model.model.layers]
        values = [torch.empty_like(k) for k in keys]
        return KVView(KVBuffer(keys, values, 0), 0, 0)

    def step(self, ids: Any, positions: Any, past: KVView | Sequence[tuple[Any, Any]] | None,
             allowed: Any = None, *, last_only: bool = True) -> tuple[Any, KVView]:
        """Logits for `ids` [B, T] at `positions` [B, T] after the cached columns `past`.

        allowed: bool [B or 1, 1, T, past + T], True where a new token may attend (None: every
        cached column and the new tokens causally). Returns the logits at the last column
        ([B, V]) or at every new column ([B, T, V]), and the cache with T more columns.
        """
        import torch
        import torch.nn.functional as F

        b, t = ids.shape
        inner = self.model.model
        heads, kv_heads = self.heads, self.kv_heads
        with torch.inference_mode():
            if isinstance(past, KVView):
                view = past if past.appendable(t) else copy_into_buffer(past.layers(), t)
            elif past:
                view = copy_into_buffer(past, t)
            else:
                view = self._empty(b, t, ids.device)
            base, buf = view.end, view.buffer
            if allowed is None and t > 1:
                allowed = torch.ones((t, view.length + t), dtype=torch.bool,
                                     device=ids.device).tril(view.length)
            h = inner.embed_tokens(ids)
            cos, sin = self._cos_sin(h, positions)
            half = cos.shape[-1] // 2
            # rotate_half(x) * sin = roll(x, half) * sin with its first half negated: the sign
            # moves from x to sin (exact), so the roll is one op where rotate_half is four
            sin = torch.cat([-sin[..., :half], sin[..., half:]], -1)
            cos, sin = cos[:, :, None], sin[:, :, None]  # [B, T, 1, head_dim]
            weights = self.fused()
            for n, (input_norm, post_norm, scaling) in enumerate(self._layers):
                qkv_w, o_w, gate_up_w, down_w = weights[n]
                x = input_norm(h)
                qkv = qkv_w(x).view(b, t, -1, self.head_dim)
                # rotary embedding on q and k at once (the same elementwise arithmetic as
                # transformers' apply_rotary_pos_emb): x * cos + rotate_half(x) * sin
                qk = qkv[:, :, :heads + kv_heads]
                qk = qk * cos + qk.roll(half, -1) * sin
                q = qk[:, :, :heads].transpose(1, 2)
                buf.keys[n][:, :, base:base + t] = qk[:, :, heads:].transpose(1, 2)
                buf.values[n][:, :, base:base + t] = qkv[:, :, heads + kv_heads:].transpose(1, 2)
                keys = buf.keys[n][:, :, view.start:base + t]
                values = buf.values[n][:, :, view.start:base + t]
                out = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed,
                                                     scale=scaling,
                                                     enable_gqa=kv_heads != heads)
                h = h + o_w(out.transpose(1, 2).reshape(b, t, -1))
                x = post_norm(h)
                gate, up = gate_up_w(x).chunk(2, -1)
                h = h + down_w(F.silu(gate) * up)
            buf.written = base + t
            assert self._head is not None  # set by fused()
            logits = self._head(self._final_norm(h[:, -1] if last_only else h))
        return logits, KVView(buf, view.start, base + t)


class RMSNorm:
    """A LlamaRMSNorm's arithmetic on fp32 without its dtype round trips (bit-identical to it;
    ~3x cheaper per call than the module or F.rms_norm on CPU at these sizes), its weight and
    epsilon read once (an nn.Module attribute lookup costs microseconds); other dtypes through
    the module (it normalises in fp32 and casts back)."""

    __slots__ = ("eps", "module", "weight")

    def __init__(self, module: Any) -> None:
        self.module, self.weight, self.eps = module, module.weight, module.variance_epsilon

    def __call__(self, x: Any) -> Any:
        import torch

        if x.dtype != torch.float32:
            return self.module(x)
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

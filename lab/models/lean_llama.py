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
    """Per-layer stores [rows, 2 * kv_heads, capacity, head_dim]: a layer's keys and values in
    one tensor (the first and second halves of dim 1; `keys` and `values` are those views), so
    a step writes a layer's new keys and values in one copy. Columns [0, written) hold data,
    the rest is room to append."""

    __slots__ = ("keys", "stores", "values", "written")

    def __init__(self, stores: list[Any], kv_heads: int, written: int) -> None:
        self.stores, self.written = stores, written
        self.keys = [s[:, :kv_heads] for s in stores]
        self.values = [s[:, kv_heads:] for s in stores]

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
    rows, heads, length, dim = (int(n) for n in k0.shape)
    buffer = _stores(len(layers), rows, heads, max(MIN_CAPACITY, 2 * (length + room)), dim,
                     k0.dtype, k0.device, length)
    for (k, v), kb, vb in zip(layers, buffer.keys, buffer.values, strict=True):
        kb[:, :, :length] = k
        vb[:, :, :length] = v
    return KVView(buffer, 0, length)


def _stores(layers: int, rows: int, kv_heads: int, capacity: int, head_dim: int, dtype: Any,
            device: Any, written: int) -> KVBuffer:
    """A `KVBuffer` of `layers` layers, uninitialised past `written`."""
    import torch

    return KVBuffer([torch.empty((rows, 2 * kv_heads, capacity, head_dim), dtype=dtype,
                                 device=device) for _ in range(layers)], kv_heads, written)


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
    """x @ w.T for a [out, in] weight, in the form this CPU runs fastest for the rows at hand (one
    thread, fp32, the shipped target's shapes). 1-3 rows: w @ x.T (MKL), one row sent as two
    (MKL's one-row product is its slow path: the step's 33 projections 2.0 ms as two rows, 2.4
    ms as x @ w.T with w.T stored, 3.3 as w @ x.T of one row). 4 rows and more: oneDNN's
    matmul on a copy of w in its blocked layout, packed at the first such call (MKL repacks w
    at every call, which at 8 rows costs as much as the arithmetic). The 33 projections in
    sequence, CPU time (AMD EPYC Zen 4, torch 2.14, load 8-10), packed vs w @ x.T vs x @ w.T:
    4 rows 2.19 / 2.17 / 3.56 ms, 8 rows 2.99 / 3.98 / 4.09, 16 rows 3.84 / 6.23 / 5.27, 64 rows
    10.4 / 12.9 / 12.2. The forms agree to float rounding (~1e-6 relative). Other dtypes on a
    CPU: x @ w.T with w.T stored (transformers' own numbers in bf16). On a GPU, F.linear
    (cuBLAS), no copy."""

    ROWS_PACKED = 4

    def __init__(self, weight: Any) -> None:
        import torch

        self.weight = weight
        cpu = weight.device.type == "cpu"
        self.fp32 = cpu and weight.dtype == torch.float32
        self.transposed = weight.t().contiguous() if cpu and not self.fp32 else None
        onednn = torch.backends.mkldnn.is_available()  # type: ignore[no-untyped-call]
        self.packable = self.fp32 and onednn
        self.packed: Any = None

    def __call__(self, x: Any) -> Any:
        import torch
        import torch.nn.functional as F

        if self.transposed is not None:
            return torch.matmul(x, self.transposed)
        if not self.fp32:
            return F.linear(x, self.weight)
        rows = x.numel() // x.shape[-1]
        if rows < self.ROWS_PACKED or not self.packable:
            flat = x.reshape(rows, x.shape[-1])
            if rows == 1:
                flat = torch.cat([flat, flat])
            return torch.mm(self.weight, flat.t()).t()[:rows].reshape(*x.shape[:-1], -1)
        if self.packed is None:
            with torch.inference_mode():
                self.packed = torch.ops.mkldnn._reorder_linear_weight(self.weight.detach())
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, None, "none", [], "")


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
        self._embed = model.model.embed_tokens.weight
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

    def _rope(self, h: Any, positions: Any) -> tuple[Any, Any]:
        """The rotary factors [B, T, heads + 2 * kv_heads, head_dim] at `positions`, one row per
        head of a packed q/k/v projection: qkv * cos + qkv.roll(head_dim // 2, -1) * sin rotates
        q and k as transformers' apply_rotary_pos_emb does (x * cos + rotate_half(x) * sin:
        rotate_half(x) * sin is roll(x) * sin with its first half negated, the sign moved from x
        to sin, exact) and leaves v as it is (cos 1, sin 0: v * 1 + v' * 0 == v). On a CPU, rows
        of a table built once from the rotary module's cos and sin for positions 0..n-1 (each
        row depends on its position alone: an outer product with one position, then
        elementwise cos and sin, so a row is the same number however many positions the module
        is called with), grown by doubling (a plain Llama's RoPE is the default one:
        `is_plain_llama`): two lookups a step, where the module costs ~90 us. On a GPU, the
        module itself at every step (the table's size check would synchronise)."""
        import torch

        rotary = self.model.model.rotary_emb
        if h.device.type != "cpu":
            return self._per_head(*rotary(h, positions))
        need = int(positions.max()) + 1
        key = (h.dtype, h.device)
        if self._rotary is None or self._rotary[0] != key or self._rotary[1].shape[0] < need:
            n = max(need, 256, 2 * (self._rotary[1].shape[0] if self._rotary else 0))
            cos, sin = self._per_head(*rotary(h, torch.arange(n, device=h.device)[None]))
            self._rotary = (key, cos[0], sin[0])
        rows = positions.reshape(-1)  # index_select: a third of advanced indexing's cost
        shape = (*positions.shape, *self._rotary[1].shape[1:])
        return (self._rotary[1].index_select(0, rows).view(shape),
                self._rotary[2].index_select(0, rows).view(shape))

    def _per_head(self, cos: Any, sin: Any) -> tuple[Any, Any]:
        """cos, sin [B, T, head_dim] as `_rope`'s factors: repeated over the q and k heads, the
        sign of sin's first half folded in, then 1 and 0 over the v heads."""
        import torch

        half = cos.shape[-1] // 2
        sin = torch.cat([-sin[..., :half], sin[..., half:]], -1)
        rotated, kept = self.heads + self.kv_heads, self.kv_heads
        shape = (*cos.shape[:-1], rotated, cos.shape[-1])
        cos = torch.cat([cos[..., None, :].expand(shape),
                         cos.new_ones((*shape[:-2], kept, shape[-1]))], -2)
        sin = torch.cat([sin[..., None, :].expand(shape),
                         sin.new_zeros((*shape[:-2], kept, shape[-1]))], -2)
        return cos, sin

    def _empty(self, rows: int, room: int, device: Any) -> KVView:
        """An empty cache with room for `room` columns (at least MIN_CAPACITY)."""
        dtype = next(self.model.parameters()).dtype
        return KVView(_stores(len(self._layers), rows, self.kv_heads, max(MIN_CAPACITY, 2 * room),
                              self.head_dim, dtype, device, 0), 0, 0)

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
            h = F.embedding(ids, self._embed)
            cos, sin = self._rope(h, positions)
            half, dim = self.head_dim // 2, self.head_dim
            weights, stores = self.fused(), buf.stores
            for n, (input_norm, post_norm, scaling) in enumerate(self._layers):
                qkv_w, o_w, gate_up_w, down_w = weights[n]
                qkv = qkv_w(input_norm(h)).view(b, t, -1, dim)
                qkv = qkv * cos + qkv.roll(half, -1) * sin  # q, k rotated, v as it was
                q = qkv[:, :, :heads].transpose(1, 2)
                stores[n][:, :, base:base + t] = qkv[:, :, heads:].transpose(1, 2)  # k and v
                out = F.scaled_dot_product_attention(
                    q, buf.keys[n][:, :, view.start:base + t],
                    buf.values[n][:, :, view.start:base + t], attn_mask=allowed, scale=scaling,
                    enable_gqa=kv_heads != heads)
                h = h + o_w(out.transpose(1, 2).reshape(b, t, -1))
                gate, up = gate_up_w(post_norm(h)).chunk(2, -1)
                h = h + down_w(F.silu(gate).mul_(up))
            buf.written = base + t
            assert self._head is not None  # set by fused()
            logits = self._head(self._final_norm(h[:, -1] if last_only else h)).contiguous()
        return logits, KVView(buf, view.start, base + t)


class RMSNorm:
    """A LlamaRMSNorm's arithmetic on fp32 without its dtype round trips (bit-identical to it;
    ~3x cheaper per call than the module or F.rms_norm on CPU at these sizes), its weight and
    epsilon read once (an nn.Module attribute lookup costs microseconds); other dtypes through
    the module (it normalises in fp32 and casts back)."""

    __slots__ = ("eps", "module", "size", "weight")

    def __init__(self, module: Any) -> None:
        import torch

        self.module, self.weight = module, module.weight
        # 0-dim tensors: an op with a Python number argument wraps it at every call (~1.5 us);
        # the same fp32 values, so the same results
        self.eps = torch.tensor(module.variance_epsilon, dtype=torch.float32)
        self.size = torch.tensor(float(module.weight.shape[-1]), dtype=torch.float32)

    def __call__(self, x: Any) -> Any:
        import torch

        if x.dtype != torch.float32:
            return self.module(x)
        # mean(x ** 2) as ATen computes it (sum, then divide by the count), without mean's
        # extra dispatches; x * x is pow(x, 2)'s own arithmetic
        var = (x * x).sum(-1, keepdim=True).div_(self.size).add_(self.eps)
        return self.weight * (x * torch.rsqrt(var))

"""A decode step of fixed shapes: what torch.compile and CUDA graphs need.

`LeanLlama.step` is fast eager code, but its shapes grow with the cache (one more column each
step) and it does Python work per call (views, the rotary table's size check), so a compiler
would recompile at every new length and a CUDA graph could not replay it. `StaticStep` is the
same arithmetic on buffers that never move: each row's keys and values live in a store of fixed
capacity, the new token's key and value are scattered into the column its row names
(`columns`, a tensor), and attention runs over the first `span` columns with a per-row length
mask (column c is visible to row r when c <= columns[r]). Every input is a tensor of a fixed
shape, so one compiled graph (or one captured CUDA graph) per (rows, span) serves every step.

It computes what `LeanLlama.step` computes for one new token per row (the same weights, rotary
rows, matmul forms and SDPA, the masked columns left out): logits equal to fp32 rounding and the
same argmax (tests/models/test_static_step.py). torch is imported lazily.
"""

from __future__ import annotations

from typing import Any

from lab.models.lean_llama import KVView, LeanLlama

PACKED_ROWS = 4  # from this many rows on a CPU in fp32, oneDNN with a packed weight (Projection)


class StaticStep:
    """One decode step of `lean`'s model over up to `rows` rows, `capacity` columns per row.

    stores[n]: layer n's keys and values [rows, 2 * kv_heads, capacity, head_dim] (keys in the
    first half of dim 1), allocated once and never moved: a step over the first b rows reads
    and writes `stores[n][:b]`, the same addresses at every call.
    """

    def __init__(self, lean: LeanLlama, rows: int, capacity: int) -> None:
        import torch

        limit = int(lean.model.config.max_position_embeddings)
        if rows < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        if not 1 <= capacity <= limit:
            raise ValueError(f"capacity must be within 1..{limit} (the model's "
                             f"max_position_embeddings), got {capacity}")
        self.lean, self.rows, self.capacity = lean, rows, capacity
        embed = lean._embed
        self.stores = [torch.zeros((rows, 2 * lean.kv_heads, capacity, lean.head_dim),
                                   dtype=embed.dtype, device=embed.device)
                       for _ in lean._layers]
        self._decoders: dict[tuple[int, bool], Any] = {}  # (rows, fused attention) -> Decoder
        self._packed: dict[int, Any] = {}  # id(weight) -> its packed copy, shared by decoders
        # spans[n - 1]: n column indices (an input whose length sets the span: an int would be
        # baked into a compiled graph the same way, but a tensor keeps one signature)
        columns = torch.arange(capacity, device=embed.device)
        self.spans = [columns[:n] for n in range(1, capacity + 1)]

    def decoder(self, rows: int, fused: bool = False) -> Any:
        """The `Decoder` module for steps over the first `rows` rows (built once per size and
        attention form: its weights in the matmul form that row count runs fastest)."""
        if not 1 <= rows <= self.rows:
            raise ValueError(f"a step over {rows} rows: this StaticStep holds 1..{self.rows}")
        key = (rows, fused)
        if key not in self._decoders:
            self._decoders[key] = decoder_module(self.lean, rows, fused, self._packed)
        return self._decoders[key]

    def load(self, view: KVView, first_row: int = 0) -> None:
        """Copy a cache's rows into rows [first_row, first_row + view.rows), its columns into
        their first columns: prefilled prompts join the batch."""
        if not 0 <= first_row <= self.rows - view.rows:
            raise ValueError(f"{view.rows} rows from row {first_row} do not fit {self.rows} rows")
        if view.length > self.capacity:
            raise ValueError(f"a {view.length}-column cache does not fit {self.capacity} columns")
        import torch

        rows = slice(first_row, first_row + view.rows)
        with torch.inference_mode():
            for store, (k, v) in zip(self.stores, view.layers(), strict=True):
                heads = k.shape[1]
                store[rows, :heads, :view.length] = k
                store[rows, heads:, :view.length] = v

    def inputs(self, ids: Any, positions: Any, columns: Any, span: int) -> tuple[Any, ...]:
        """The decoder's arguments for a step over the first ids.shape[0] rows."""
        b = ids.shape[0]
        if not 1 <= span <= self.capacity:
            raise ValueError(f"span must be within 1..{self.capacity}, got {span}")
        return (ids, positions, columns, self.spans[span - 1], *(s[:b] for s in self.stores))

    def check_columns(self, columns: Any, span: int) -> None:
        """A column outside 0..span-1 would be written into another row's store (the write
        is an index into the stores seen flat): refuse it. Reads the columns, so on a GPU it
        waits for them; callers there check their own bookkeeping instead."""
        values = columns.tolist()  # a few rows: cheaper than two reductions and two syncs
        low, high = min(values), max(values)
        if low < 0 or high >= span:
            raise ValueError(f"columns must be within 0..{span - 1} (the span), got {low}..{high}")


    def step(self, ids: Any, positions: Any, columns: Any, span: int | None = None,
             fused: bool = False) -> Any:
        """Logits [b, V] of the tokens `ids` [b, 1] at rotary `positions` [b, 1], each written
        into column `columns[r]` ([b] long, < span) of row r's store, attention over the first
        `span` columns (default: the capacity), row r seeing its columns up to columns[r]. Eager;
        `lab.models.decode_runner` compiles or graphs the same module."""
        import torch

        span = span or self.capacity
        self.check_columns(columns, span)
        with torch.inference_mode():
            decoder = self.decoder(ids.shape[0], fused)
            return decoder(*self.inputs(ids, positions, columns, span))


def rotary_rows(lean: LeanLlama) -> tuple[Any, Any]:
    """cos, sin [max_position_embeddings, head_dim]: the rotary rows of every position, as
    LeanLlama's table holds them (sin's first half negated, so a rotation is x * cos +
    x.roll(head_dim // 2) * sin), from the model's own rotary module."""
    import torch

    weight, model = lean._embed, lean.model
    limit = int(model.config.max_position_embeddings)
    with torch.inference_mode():
        cos, sin = model.model.rotary_emb(weight.new_empty(0),
                                          torch.arange(limit, device=weight.device)[None])
        half = cos.shape[-1] // 2
        return (cos[0].contiguous(),
                torch.cat([-sin[0, :, :half], sin[0, :, half:]], -1).contiguous())


def decoder_module(lean: LeanLlama, rows: int, fused: bool = False,
                   packed: dict[int, Any] | None = None) -> Any:
    """A `Decoder` (an nn.Module, so a compiler with freezing sees its weights as constants and
    keeps the packed ones packed) for steps of `rows` rows. fused: the forms inductor compiles
    best on a CPU, written as products and sums it fuses into its own loops: attention (the
    SDPA kernel costs ~60-180 us a call on these shapes, more than the arithmetic) and, for one
    row, the projections (a multiply-and-sum over each weight row, as fast as reading the
    weight: at B = 1 the step took 1.72 ms against 1.96 with MKL's product, one run at load
    ~5); else F.scaled_dot_product_attention and the matmul forms of `Projection`. packed:
    packed weights by id(weight), reused and filled (decoders of 4, 8 and 16 rows share one
    packed copy)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Decoder(nn.Module):
        """forward(ids [b, 1], positions [b, 1], columns [b], *stores) -> logits [b, V]; writes
        each layer's new key and value into its store ([b, 2 kv_heads, capacity, d]) at its
        row's column, then attends over the first span.shape[0] columns."""

        embed: Any  # registered buffers (typed here: nn.Module's attribute type is a union)
        cos: Any
        sin: Any
        size: Any
        norm: Any
        norm_eps: Any
        head: Any

        def __init__(self) -> None:
            super().__init__()
            self.heads, self.kv_heads, self.dim = lean.heads, lean.kv_heads, lean.head_dim
            self.scales = [scaling for _, _, scaling in lean._layers]
            self.register_buffer("embed", lean._embed)
            weight = lean._embed
            cos, sin = rotary_rows(lean)
            self.register_buffer("cos", cos)
            self.register_buffer("sin", sin)
            self.register_buffer("size", torch.tensor(float(weight.shape[-1]),
                                                      dtype=torch.float32))
            self.packed = (weight.device.type == "cpu" and weight.dtype == torch.float32
                           and rows >= PACKED_ROWS
                           and torch.backends.mkldnn.is_available())  # type: ignore[no-untyped-call]
            self.names: list[tuple[str, ...]] = []
            for n, ((inp, post, _), projections) in enumerate(
                    zip(lean._layers, lean.fused(), strict=True)):
                names = (f"in{n}", f"in_eps{n}", f"post{n}", f"post_eps{n}")
                for name, tensor in zip(names, (inp.weight, inp.eps, post.weight, post.eps),
                                        strict=True):
                    self.register_buffer(name, tensor)
                projs = tuple(f"{kind}{n}" for kind in ("qkv", "o", "gate_up", "down"))
                for name, projection in zip(projs, projections, strict=True):
                    self.register_buffer(name, self._weight(projection.weight))
                self.names.append(names + projs)
            self.register_buffer("norm", lean._final_norm.weight)
            self.register_buffer("norm_eps", lean._final_norm.eps)
            assert lean._head is not None  # set by fused()
            self.register_buffer("head", self._weight(lean._head.weight))
            self.small = weight.device.type == "cpu" and rows < PACKED_ROWS
            self.fused = fused

        def _weight(self, weight: Any) -> Any:
            if not self.packed:
                return weight
            cache = {} if packed is None else packed
            if id(weight) not in cache:
                with torch.inference_mode():
                    cache[id(weight)] = torch.ops.mkldnn._reorder_linear_weight(weight.detach())
            return cache[id(weight)]

        def linear(self, x: Any, weight: Any) -> Any:
            """x [b, in] @ w.T in the fastest form for b rows on this device (see above)."""
            if self.fused and self.small and x.shape[0] == 1:
                return (weight[None] * x[:, None]).sum(-1)
            if self.packed:
                return torch.ops.mkldnn._linear_pointwise(x, weight, None, "none", [], "")
            if self.small:  # MKL's w @ x.T; one row sent as two (its one-row path is slow)
                b = x.shape[0]
                flat = torch.cat([x, x]) if b == 1 else x
                return torch.mm(weight, flat.t()).t()[:b]
            return F.linear(x, weight)

        def rms(self, x: Any, weight: Any, eps: Any) -> Any:
            """LeanLlama's RMSNorm arithmetic (sum of squares / size + eps, rsqrt, scale)."""
            var = (x * x).sum(-1, keepdim=True).div(self.size).add(eps)
            return weight * (x * torch.rsqrt(var))

        def attend(self, q: Any, k: Any, v: Any, visible: Any, scale: float) -> Any:
            """q [b, heads, d] over k, v [b, kv_heads, span, d] where `visible`; query head h
            reads kv head h // (heads / kv_heads), as SDPA's enable_gqa does."""
            if not self.fused:
                return F.scaled_dot_product_attention(
                    q[:, :, None], k, v, attn_mask=visible, scale=scale,
                    enable_gqa=self.kv_heads != self.heads)
            b, kv_heads = q.shape[0], k.shape[1]
            q = q.view(b, kv_heads, -1, q.shape[-1])  # [b, kv_heads, group, d]
            scores = (q[:, :, :, None] * k[:, :, None]).sum(-1) * scale  # [b, kvh, g, span]
            scores = scores.masked_fill(~visible, float("-inf"))
            return (scores.softmax(-1)[..., None] * v[:, :, None]).sum(-2)

        def forward(self, ids: Any, positions: Any, columns: Any, span: Any, *stores: Any
                    ) -> Any:
            b, heads, kv_heads, dim = ids.shape[0], self.heads, self.kv_heads, self.dim
            capacity, width = stores[0].shape[2], span.shape[0]
            h = F.embedding(ids[:, 0], self.embed)  # [b, hidden]
            pos = positions.reshape(-1)
            cos = self.cos.index_select(0, pos)[:, None]  # [b, 1, d]
            sin = self.sin.index_select(0, pos)[:, None]
            visible = (span[None] <= columns[:, None])[:, None, None]  # [b, 1, 1, span]
            # the new key and value of row r, head j go to row (r * 2 kv_heads + j) * capacity
            # + columns[r] of the store seen as [b * 2 kv_heads * capacity, d]
            index = ((torch.arange(b * 2 * kv_heads, device=ids.device) * capacity).view(b, -1)
                     + columns[:, None]).reshape(-1)
            for store, scaling, names in zip(stores, self.scales, self.names, strict=True):
                inp, in_eps, post, post_eps, qkv_w, o_w, gate_up_w, down_w = (
                    getattr(self, name) for name in names)
                qkv = self.linear(self.rms(h, inp, in_eps), qkv_w).view(b, -1, dim)
                rotated = qkv[:, :heads + kv_heads]
                rotated = rotated * cos + rotated.roll(dim // 2, -1) * sin
                kv = torch.cat([rotated[:, heads:], qkv[:, heads + kv_heads:]], 1)
                store.view(-1, dim).index_put_((index,), kv.reshape(-1, dim))
                seen = store[:, :, :width]
                out = self.attend(rotated[:, :heads], seen[:, :kv_heads], seen[:, kv_heads:],
                                  visible, scaling)
                h = h + self.linear(out.reshape(b, -1), o_w)
                gate, up = self.linear(self.rms(h, post, post_eps), gate_up_w).chunk(2, -1)
                h = h + self.linear(F.silu(gate) * up, down_w)
            return self.linear(self.rms(h, self.norm, self.norm_eps), self.head)

    return Decoder().eval()

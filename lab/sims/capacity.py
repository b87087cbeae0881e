"""Serving capacity: how many full-context seats a model gets on a GPU group, and how fast it runs.

Roofline arithmetic from the serving-facts note: KV bytes per token, weights, free memory → seats;
prefill FLOPs ÷ (peak × MFU) → TTFT; bytes read per decode step ÷ HBM bandwidth → step floor.
`gpus` is a tensor-parallel group: weights and KV are split evenly across it (KV heads are
replicated when there are more GPUs than KV heads); communication time is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from lab.sims.base import (
    Check,
    InputSpec,
    Output,
    Preset,
    Sim,
    SimInputError,
    SimResult,
    Value,
    at_least,
    at_most,
    num,
    unit,
)

GB = 1e9  # weights: decimal, like parameter counts
GIB = 2**30  # HBM: the marketed "80 GB" of an H100 is 80 GiB (nvidia-smi: 81,559 MiB)
KIB = 1024

_H100 = {"gpu_mem_gib": 80.0, "hbm_tbps": 3.35, "tflops": 989.0}
_H200 = {"gpu_mem_gib": 141.0, "hbm_tbps": 4.8, "tflops": 989.0}
_LLAMA3_8B = {"layers": 32, "kv_heads": 8, "head_dim": 128, "params_b": 8.03}
_LLAMA3_70B = {"layers": 80, "kv_heads": 8, "head_dim": 128, "params_b": 70.55}


def _seats(n: float) -> str:
    return f"{num(n, 9)} seat" + ("" if n == 1 else "s")


class CapacitySim(Sim):
    name = "capacity"
    title = "Serving capacity"
    summary = (
        "Seats, time to first token and decode speed of a model on a tensor-parallel GPU group."
    )
    inputs = (
        InputSpec("layers", "Layers", "layers", 32, "int", 1, 512, 1,
                  help="Transformer layers (num_hidden_layers)."),
        InputSpec("kv_heads", "KV heads", "heads", 8, "int", 1, 512, 1,
                  help="Key/value heads (num_key_value_heads); fewer than query heads = GQA."),
        InputSpec("head_dim", "Head dim", "dims", 128, "int", 8, 1024, 8,
                  help="Size of one attention head."),
        InputSpec("params_b", "Parameters", "B params", 8.03, "float", 0.1, 5000, 0.1,
                  help="Total parameters, in billions."),
        InputSpec("weight_bytes", "Weight dtype", "B/param", 2.0, "float", 0.25, 4, 0.25,
                  help="Bytes per weight: bf16 2, fp8 1, int4 0.5."),
        InputSpec("kv_bytes", "KV dtype", "B/elem", 2.0, "float", 0.25, 4, 0.25,
                  help="Bytes per cached K/V element: bf16 2, fp8 1."),
        InputSpec("gpu_mem_gib", "GPU memory", "GiB", 80.0, "float", 1, 2048, 1,
                  help="HBM per GPU as marketed, which is GiB (2^30 B): H100 80, H200 141, "
                       "B200 180/192."),
        InputSpec("hbm_tbps", "HBM bandwidth", "TB/s", 3.35, "float", 0.05, 100, 0.05,
                  help="Per GPU: H100 3.35, H200 4.8, B200 8, A100 2.039."),
        InputSpec("tflops", "Dense compute", "TFLOP/s", 989.0, "float", 1, 100000, 1,
                  help="Dense BF16 per GPU (not the sparse headline): H100 989, B200 2,250."),
        InputSpec("gpus", "GPUs (TP)", "GPUs", 1, "int", 1, 1024, 1,
                  help="Tensor-parallel group: weights and KV split evenly across it."),
        InputSpec("context", "Context", "tokens", 32768, "int", 1, 10_000_000, 1024,
                  help="Tokens each seat may hold (prompt + output); 8k is 8,192, as model "
                       "cards write it.", binary_k=True),
        InputSpec("prompt_tokens", "Prompt", "tokens", 4096, "int", 1, 10_000_000, 256,
                  help="Prompt length whose prefill sets time to first token."),
        InputSpec("output_tokens", "Output", "tokens", 512, "int", 1, 10_000_000, 64,
                  help="Tokens generated per request; sets request latency at the seat limit."),
        InputSpec("reserve_gib", "Memory reserve", "GiB/GPU", 8.0, "float", 0, 2048, 1,
                  help="Per GPU, kept for activations, CUDA graphs and fragmentation."),
        InputSpec("mfu", "Prefill MFU", "of peak", 0.5, "float", 0.01, 1.0, 0.05,
                  help="Share of peak FLOP/s prefill achieves.", percent=True),
        InputSpec("target_seats", "Target seats", "seats", 64, "int", 0, 10_000_000, 1,
                  help="Check: at least this many concurrent seats at the context."),
        InputSpec("target_ttft_s", "Target TTFT", "s", 0.5, "float", 0.001, 3600, 0.05,
                  help="Check: prefill of the prompt takes at most this long."),
        InputSpec("target_step_ms", "Target step", "ms", 50.0, "float", 0.01, 100000, 1,
                  help="Check: a decode step with every seat full takes at most this long."),
    )
    presets = {
        "llama3-8b-h100": Preset(
            "llama3-8b-h100", "Llama-3-8B bf16 on 1×H100",
            "The note's worked example: weights alone make a 4.79 ms step, ≤ 209 tok/s at batch 1.",
            {**_LLAMA3_8B, "weight_bytes": 2.0, "kv_bytes": 2.0, **_H100, "gpus": 1},
        ),
        "llama3-70b-8xh100": Preset(
            "llama3-70b-8xh100", "Llama-3-70B bf16 on 8×H100 (TP 8)",
            "141 GB of weights split 8 ways; fp8 KV (kv_bytes=1) doubles the seats.",
            {**_LLAMA3_70B, "weight_bytes": 2.0, "kv_bytes": 2.0, **_H100, "gpus": 8},
        ),
        "llama3-70b-fp8-h200": Preset(
            "llama3-70b-fp8-h200", "Llama-3-70B fp8 on 1×H200",
            "FP8 weights (70.55 GB = 65.7 GiB) fit one 141 GiB card; the rest is KV.",
            {**_LLAMA3_70B, "weight_bytes": 1.0, "kv_bytes": 1.0, **_H200, "gpus": 1},
        ),
        "llama2-13b-h100": Preset(
            "llama2-13b-h100", "Llama-2-13B bf16 on 1×H100 (MHA)",
            "MHA trap: 800 KiB of KV per token, more than Llama-3.1-405B's 504 KiB.",
            {"layers": 40, "kv_heads": 40, "head_dim": 128, "params_b": 13.02,
             "weight_bytes": 2.0, "kv_bytes": 2.0, **_H100, "gpus": 1},
        ),
        "llama31-405b-fp8-8xh200": Preset(
            "llama31-405b-fp8-8xh200", "Llama-3.1-405B fp8 on 8×H200 (TP 8)",
            "406 GB of fp8 weights across 1,128 GiB of HBM.",
            {"layers": 126, "kv_heads": 8, "head_dim": 128, "params_b": 405.85,
             "weight_bytes": 1.0, "kv_bytes": 1.0, **_H200, "gpus": 8},
        ),
    }

    def _cross_check(self, values: Mapping[str, Value]) -> None:
        prompt, output, ctx = (int(values["prompt_tokens"]), int(values["output_tokens"]),
                               int(values["context"]))
        if prompt + output > ctx:
            raise SimInputError(
                f"prompt_tokens + output_tokens ({prompt:,} + {output:,}) is longer than the "
                f"context ({ctx:,}) a seat holds"
            )
        if float(values["reserve_gib"]) >= float(values["gpu_mem_gib"]):
            raise SimInputError(
                f"reserve_gib ({values['reserve_gib']}) leaves nothing of gpu_mem_gib "
                f"({values['gpu_mem_gib']})"
            )

    def _compute(self, v: Mapping[str, Value]) -> SimResult:
        run = _Run(v)
        run.memory()
        run.prefill()
        run.decode()
        run.ridge()
        return SimResult(self.name, dict(v), run.out, run.f, run.checks())


class _Run:
    """One computation of the sim: the inputs read, each part's formulas (`f`) and outputs
    (`out`) appended in the order they are shown."""

    def __init__(self, v: Mapping[str, Value]) -> None:
        self.v = v
        self.layers, self.kv_heads = int(v["layers"]), int(v["kv_heads"])
        self.head_dim = int(v["head_dim"])
        self.params = float(v["params_b"]) * 1e9
        self.wb, self.kvb = float(v["weight_bytes"]), float(v["kv_bytes"])
        self.gpus = int(v["gpus"])
        self.mem, self.reserve = float(v["gpu_mem_gib"]) * GIB, float(v["reserve_gib"]) * GIB
        self.bw, self.peak = float(v["hbm_tbps"]) * 1e12, float(v["tflops"]) * 1e12
        self.ctx, self.prompt = int(v["context"]), int(v["prompt_tokens"])
        self.mfu = float(v["mfu"])
        self.group_bw, self.group_peak = self.gpus * self.bw, self.gpus * self.peak
        self.f: list[str] = []
        self.out: list[Output] = []

    def memory(self) -> None:
        """KV per token, weights, free memory and the full-context seats it holds."""
        f, layers, kv_heads, head_dim, kvb = self.f, self.layers, self.kv_heads, self.head_dim, \
            self.kvb
        gpus, params, wb, mem, reserve, ctx = (self.gpus, self.params, self.wb, self.mem,
                                               self.reserve, self.ctx)
        kv_tok = 2 * layers * kv_heads * head_dim * kvb
        f.append(
            f"KV per token = 2 (K,V) × {layers} layers × {kv_heads} KV heads × {head_dim} "
            f"head_dim × {num(kvb)} B = {num(kv_tok, 6)} B = {num(kv_tok / KIB)} KiB"
        )
        replicas = gpus / kv_heads if gpus > kv_heads else 1.0
        kv_group = kv_tok * replicas
        if replicas > 1:
            f.append(
                f"{gpus} GPUs > {kv_heads} KV heads: each head is held by {num(replicas)} GPUs, "
                f"so the group stores {num(kv_group / KIB)} KiB per token"
            )
        self.weights = weights = params * wb
        f.append(f"Weights = {num(params / 1e9)}B params × {num(wb)} B = {num(weights / GB)} GB"
                 f" = {num(weights / GIB)} GiB"
                 + (f" ({num(weights / GIB / gpus)} GiB per GPU over {gpus} GPUs)"
                    if gpus > 1 else ""))
        usable = gpus * (mem - reserve)
        self.free = free = usable - weights
        f.append(
            f"Free for KV = {gpus} × ({num(mem / GIB)} − {num(reserve / GIB)} reserve) GiB − "
            f"{num(weights / GIB)} GiB weights = {num(free / GIB)} GiB"
        )
        self.seat_bytes = seat_bytes = kv_group * ctx
        self.seats = seats = max(0, math.floor(free / seat_bytes)) if free > 0 else 0
        f.append(
            f"Seats = floor({num(free / GIB)} GiB ÷ ({num(kv_group / KIB)} KiB × {ctx:,} tokens "
            f"= {num(seat_bytes / GIB)} GiB)) = {seats}"
        )
        self.out += [
            Output("kv_bytes_per_token", "KV per token", kv_tok, "B",
                   f"{num(kv_tok / KIB)} KiB"),
            Output("weight_gb", "Weight memory", weights / GB, "GB", f"{num(weights / GB)} GB"),
            Output("weight_gb_per_gpu", "Weights per GPU", weights / GB / gpus, "GB",
                   f"{num(weights / GB / gpus)} GB"),
            Output("free_gib", "Free for KV", free / GIB, "GiB", f"{num(free / GIB)} GiB"),
            Output("seat_gib", "KV per full seat", seat_bytes / GIB, "GiB",
                   f"{num(seat_bytes / GIB)} GiB"),
            Output("seats", "Concurrent seats", seats, "seats",
                   f"{seats} at {ctx:,} tokens"),
        ]

    def prefill(self) -> None:
        """TTFT from the prompt's FLOPs, and the step floor of reading the weights."""
        f, params, prompt, gpus, peak, mfu = (self.f, self.params, self.prompt, self.gpus,
                                              self.peak, self.mfu)
        weights, bw = self.weights, self.bw
        flops = 2 * params * prompt
        self.ttft = ttft = flops / (gpus * peak * mfu)
        f.append(
            f"TTFT ≈ 2 × {num(params / 1e9)}B × {prompt:,} tokens = {num(flops / 1e12)} TFLOP ÷ "
            f"({gpus} × {num(peak / 1e12)} TFLOP/s × {num(mfu)} MFU) = {num(ttft)} s "
            "(attention FLOPs ignored)"
        )
        self.out.append(Output("ttft_s", "Time to first token", ttft, "s", f"{num(ttft)} s"))
        floor_s = weights / self.group_bw
        f.append(
            f"Weights read per step = {num(weights / GB)} GB ÷ ({gpus} × {num(bw / 1e12)} TB/s) = "
            f"{num(floor_s * 1e3)} ms → ≤ {num(1 / floor_s)} tok/s at batch 1 with a short context"
        )
        self.out += [
            Output("weights_step_ms", "Step floor (weights only)", floor_s * 1e3, "ms",
                   f"{num(floor_s * 1e3)} ms"),
            Output("weights_tps", "Batch-1 ceiling (short context)", 1 / floor_s, "tok/s",
                   f"≤ {num(1 / floor_s)} tok/s"),
        ]

    def _step_line(self, batch: int, what: str) -> float:
        """One decode step at `batch` full-context seats: the slower of reading the weights
        and KV and computing, with its formula."""
        weights, seat_bytes, params = self.weights, self.seat_bytes, self.params
        group_bw, group_peak = self.group_bw, self.group_peak
        memory = (weights + batch * seat_bytes) / group_bw
        compute = 2 * params * batch / group_peak
        total = max(memory, compute)
        bound = "memory" if memory >= compute else "compute"
        self.f.append(
            f"{what}: max(({num(weights / GB)} GB + {batch} × {num(seat_bytes / GB)} GB KV) ÷ "
            f"{num(group_bw / 1e12)} TB/s = {num(memory * 1e3)} ms, 2 × {num(params / 1e9)}B × "
            f"{batch} ÷ {num(group_peak / 1e12)} TFLOP/s = {num(compute * 1e3)} ms) = "
            f"{num(total * 1e3)} ms ({bound}-bound)"
        )
        return total

    def decode(self) -> None:
        """Steps at batch 1 and at the seat limit, and a request's latency there."""
        f, seats, ttft = self.f, self.seats, self.ttft
        b1 = self._step_line(1, "Step at batch 1, full context")
        self.out += [
            Output("b1_step_ms", "Step at batch 1", b1 * 1e3, "ms", f"{num(b1 * 1e3)} ms"),
            Output("b1_tps", "Tokens/s at batch 1", 1 / b1, "tok/s", f"≤ {num(1 / b1)} tok/s"),
        ]
        label = f"Step at the seat limit ({seats} seats)" if seats else "Step at batch 1 (no seats)"
        self.full = full = self._step_line(max(seats, 1), label)
        self.out += [
            Output("seat_step_ms", "Step at the seat limit", full * 1e3, "ms",
                   f"{num(full * 1e3)} ms"),
            Output("seat_tps", "Tokens/s at the seat limit", seats / full, "tok/s",
                   f"≤ {num(seats / full)} tok/s in all, {num(1 / full)} per seat"),
            Output("seat_tps_per_seat", "Tokens/s per seat at the limit", 1 / full, "tok/s",
                   f"≤ {num(1 / full)} tok/s"),
        ]
        f.append(f"Tokens/s at the seat limit = {seats} ÷ {num(full * 1e3)} ms = "
                 f"{num(seats / full)} tok/s ({num(1 / full)} per seat)")
        n_out = int(self.v["output_tokens"])
        latency = ttft + (n_out - 1) * full
        f.append(f"Request latency ≈ TTFT {num(ttft)} s + ({n_out:,} − 1) × {num(full * 1e3)} ms "
                 f"= {num(latency)} s (every seat full)")
        self.out.append(Output("latency_s", "Request latency at the seat limit", latency, "s",
                               f"{num(latency)} s for {n_out:,} output tokens"))

    def ridge(self) -> None:
        """The batch from which decode is compute-bound, with a short and a full context."""
        f, weights, params, ctx = self.f, self.weights, self.params, self.ctx
        group_bw, group_peak, seat_bytes = self.group_bw, self.group_peak, self.seat_bytes
        ridge = weights * group_peak / (2 * params * group_bw)
        f.append(
            f"Ridge batch (weights only) = {num(weights / GB)} GB × {num(group_peak / 1e12)} "
            f"TFLOP/s ÷ (2 × {num(params / 1e9)}B × {num(group_bw / 1e12)} TB/s) = {num(ridge)}"
        )
        self.out.append(Output("ridge_batch", "Compute-bound from batch (short context)", ridge,
                               "seqs", f"{num(ridge)} sequences"))
        per_seq_compute_bytes = 2 * params * group_bw / group_peak
        denominator = per_seq_compute_bytes - seat_bytes
        ridge_ctx: float | None = None
        if denominator > 0:
            ridge_ctx = weights / denominator
            ridge_text = f"{num(ridge_ctx)} sequences"
            f.append(
                f"Ridge at {ctx:,} tokens = {num(weights / GB)} GB ÷ "
                f"({num(per_seq_compute_bytes / GB)} GB − {num(seat_bytes / GB)} GB) = "
                f"{num(ridge_ctx)}"
            )
        else:
            ridge_text = "never"
            f.append(
                f"Ridge at {ctx:,} tokens: never — each sequence reads "
                f"{num(seat_bytes / GB)} GB of KV per step, more than the "
                f"{num(per_seq_compute_bytes / GB)} GB its FLOPs take at peak, "
                "so decode stays memory-bound at any batch"
            )
        self.out.append(Output("ridge_batch_at_context", "Compute-bound from batch (full context)",
                               ridge_ctx, "seqs", ridge_text))

    def checks(self) -> list[Check]:
        v, ctx, prompt = self.v, self.ctx, self.prompt
        return [
            at_least("fits", "Weights and one full-context seat fit in memory",
                     self.free / GIB, self.seat_bytes / GIB, unit("GiB")),
            at_least("seats", f"At least {int(v['target_seats'])} seats at {ctx:,} tokens",
                     float(self.seats), float(int(v["target_seats"])), _seats),
            at_most("ttft", f"TTFT ≤ {num(float(v['target_ttft_s']))} s for {prompt:,} tokens",
                    self.ttft, float(v["target_ttft_s"]), unit("s")),
            at_most("step", f"Decode step ≤ {num(float(v['target_step_ms']))} ms with every seat "
                    "full", self.full * 1e3, float(v["target_step_ms"]), unit("ms")),
        ]

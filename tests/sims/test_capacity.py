"""Serving-capacity sim pinned on hand-computed cases (the arithmetic written out, not reused)."""

from __future__ import annotations

import pytest

from lab.sims import SIMS

CAP = SIMS["capacity"]


def test_note_example_8b_bf16_h100_batch1_is_479ms_and_209_tok_s() -> None:
    r = CAP.evaluate(preset="llama3-8b-h100")
    # weights = 8.03e9 params × 2 B = 16.06e9 B; ÷ 3.35e12 B/s = 4.7940 ms; 1 ÷ 4.794 ms = 208.6
    assert r.value("weight_gb") == pytest.approx(16.06)
    assert r.value("weights_step_ms") == pytest.approx(4.794, abs=5e-4)
    assert r.value("weights_tps") == pytest.approx(208.6, abs=0.05)
    assert r.value("weights_tps") <= 209
    assert any("4.794 ms" in line and "208.6 tok/s" in line for line in r.formulas)


def test_default_8b_h100_at_32k_hand_computed() -> None:
    r = CAP.evaluate()  # defaults = Llama-3-8B bf16, 1×H100, 32,768 context, 4,096 prompt
    # KV/token = 2 × 32 × 8 × 128 × 2 = 131,072 B = 128 KiB
    assert r.value("kv_bytes_per_token") == 131_072
    # HBM is GiB: free = (80 − 8 reserve) × 2^30 B − 16.06e9 B = 77.309411328e9 − 16.06e9
    # = 61.249411328e9 B = 57.04296 GiB; a seat = 131,072 × 32,768 = 2^32 B = 4 GiB
    assert r.value("free_gib") == pytest.approx(57.04296, abs=1e-5)
    assert r.value("seat_gib") == pytest.approx(4.0)
    # seats = floor(57.04296 / 4) = floor(14.26) = 14
    assert r.value("seats") == 14
    # TTFT = 2 × 8.03e9 × 4096 / (989e12 × 0.5) = 6.5782e13 / 4.945e14 = 0.13303 s
    assert r.value("ttft_s") == pytest.approx(0.13303, abs=1e-5)
    # batch 1, full context: (16.06 + 4.294967296) GB / 3.35 TB/s = 6.0761 ms → 164.58 tok/s
    assert r.value("b1_step_ms") == pytest.approx(6.0761, abs=1e-4)
    assert r.value("b1_tps") == pytest.approx(164.58, abs=0.01)
    # 14 seats: (16.06 + 14 × 4.294967296 = 76.189542144) GB / 3.35 TB/s = 22.743 ms
    assert r.value("seat_step_ms") == pytest.approx(22.743, abs=1e-3)
    # 14 / 22.743 ms = 615.57 tok/s in all
    assert r.value("seat_tps") == pytest.approx(615.57, abs=0.05)
    # latency = TTFT + (512 − 1) × step = 0.133027 + 511 × 0.0227431 = 11.7548 s
    assert r.value("latency_s") == pytest.approx(11.7548, abs=1e-4)
    # ridge (weights only) = 989 TFLOP/s / 3.35 TB/s = 295.2 for bf16 (2 B per 2 FLOP)
    assert r.value("ridge_batch") == pytest.approx(295.22, abs=0.01)
    # at 32K each sequence reads 4.29 GB of KV per step: decode never turns compute-bound
    assert r.output("ridge_batch_at_context").value is None
    assert r.output("ridge_batch_at_context").text == "never"


def test_default_checks_and_margins() -> None:
    r = CAP.evaluate()
    seats = r.check("seats")
    assert not seats.passed and seats.margin == 14 - 64
    assert "50 seats short of the target of 64 seats" in seats.margin_text
    ttft = r.check("ttft")
    # 0.5 − 0.13303 = 0.36697 s of headroom
    assert ttft.passed and ttft.margin == pytest.approx(0.36697, abs=1e-5)
    step = r.check("step")
    assert step.passed and step.margin == pytest.approx(50 - 22.743, abs=1e-3)
    fits = r.check("fits")
    assert fits.passed and fits.margin == pytest.approx(57.04296 - 4, abs=1e-5)


def test_targets_are_dials() -> None:
    assert CAP.evaluate({"target_seats": 14}).check("seats").passed
    assert not CAP.evaluate({"target_seats": 15}).check("seats").passed
    # TTFT of a 32,768-token prompt: 2 × 8.03e9 × 32768 / 4.945e14 = 1.0642 s > 0.5 s
    long_prompt = CAP.evaluate({"prompt_tokens": 32768, "context": 65536})
    assert long_prompt.value("ttft_s") == pytest.approx(1.0642, abs=1e-4)
    assert not long_prompt.check("ttft").passed
    relaxed = {"prompt_tokens": 32768, "context": 65536, "target_ttft_s": 1.1}
    assert CAP.evaluate(relaxed).check("ttft").passed


def test_70b_on_8xh100_tensor_parallel() -> None:
    r = CAP.evaluate(preset="llama3-70b-8xh100")
    # weights 70.55e9 × 2 = 141.1 GB, 17.6375 GB per GPU
    assert r.value("weight_gb_per_gpu") == pytest.approx(17.6375)
    # free = 8 × 72 GiB − 141.1e9 B = 618.475e9 − 141.1e9 = 477.375e9 B = 444.59 GiB;
    # KV 2 × 80 × 8 × 128 × 2 = 327,680 B/token
    assert r.value("free_gib") == pytest.approx(444.5904, abs=1e-4)
    # seat = 327,680 × 32,768 = 10 GiB exactly; floor(444.59 / 10) = 44
    assert r.value("seats") == 44
    # TTFT = 2 × 70.55e9 × 4096 / (8 × 989e12 × 0.5) = 5.779456e14 / 3.956e15 = 0.14609 s
    assert r.value("ttft_s") == pytest.approx(0.14609, abs=1e-5)
    # weights alone: 141.1e9 / (8 × 3.35e12) = 5.2649 ms
    assert r.value("weights_step_ms") == pytest.approx(5.2649, abs=1e-4)
    # fp8 KV halves the seat: floor(444.59 / 5) = 88 ≥ 64, check passes
    fp8 = CAP.evaluate({"kv_bytes": 1}, preset="llama3-70b-8xh100")
    assert fp8.value("seats") == 88 and fp8.check("seats").passed


def test_more_gpus_than_kv_heads_replicates_kv() -> None:
    r = CAP.evaluate({"gpus": 16}, preset="llama3-70b-8xh100")
    # 16 GPUs, 8 KV heads: each head on 2 GPUs, group stores 2 × 327,680 = 655,360 B per token
    # free = 16 × 72 GiB − 141.1e9 B = 1,020.59 GiB; seat = 655,360 × 32,768 = 20 GiB → 51 seats
    assert r.value("free_gib") == pytest.approx(1020.5904, abs=1e-4)
    assert r.value("seat_gib") == pytest.approx(20.0)
    assert r.value("seats") == 51
    assert any("each head is held by 2 GPUs" in line for line in r.formulas)


def test_bf16_70b_does_not_fit_one_h100() -> None:
    r = CAP.evaluate({"gpus": 1}, preset="llama3-70b-8xh100")
    # free = 72 GiB − 141.1e9 B = 77.309e9 − 141.1e9 = −63.79e9 B = −59.41 GiB: no seat at all
    assert r.value("free_gib") == pytest.approx(-59.4096, abs=1e-4)
    assert r.value("seats") == 0
    fits = r.check("fits")
    assert not fits.passed and fits.margin == pytest.approx(-59.4096 - 10, abs=1e-4)


def test_short_context_has_a_finite_ridge() -> None:
    r = CAP.evaluate({"context": 256, "prompt_tokens": 128, "output_tokens": 128})
    # compute per sequence at peak, as bytes of bandwidth: 2 × 8.03e9 × 3.35e12 / 989e12
    # = 54.3994e6 B; KV read per sequence = 131,072 × 256 = 33.554e6 B
    # ridge = 16.06e9 / (54.3994e6 − 33.5544e6) = 770.5 sequences
    assert r.value("ridge_batch_at_context") == pytest.approx(770.5, abs=0.1)


def test_fp8_weights_halve_the_ridge_batch() -> None:
    r = CAP.evaluate(preset="llama3-70b-fp8-h200")
    # 1 B per weight, 2 FLOP per weight: ridge = 989 / 4.8 / 2 = 103.0
    assert r.value("ridge_batch") == pytest.approx(103.02, abs=0.01)
    # 70.55e9 B fp8 on (141 − 8) GiB = 142.807e9 B leaves 72.257e9 B = 67.295 GiB;
    # fp8 KV seat = 163,840 × 32,768 = 5 GiB; floor(67.295 / 5) = 13
    assert r.value("seats") == 13


def test_mha_trap_13b_has_more_kv_per_token_than_405b() -> None:
    mha = CAP.evaluate(preset="llama2-13b-h100")
    big = CAP.evaluate({"kv_bytes": 2}, preset="llama31-405b-fp8-8xh200")
    # 2 × 40 × 40 × 128 × 2 = 819,200 B (800 KiB) vs 2 × 126 × 8 × 128 × 2 = 516,096 (504 KiB)
    assert mha.value("kv_bytes_per_token") == 819_200
    assert big.value("kv_bytes_per_token") == 516_096


def test_a_dial_change_moves_the_outputs() -> None:
    base = CAP.evaluate()
    # a faster card (H200 bandwidth 4.8 TB/s): weights step 16.06e9 / 4.8e12 = 3.3458 ms
    faster = CAP.evaluate({"hbm_tbps": 4.8})
    assert faster.value("weights_step_ms") == pytest.approx(3.3458, abs=1e-4)
    assert faster.value("seats") == base.value("seats")

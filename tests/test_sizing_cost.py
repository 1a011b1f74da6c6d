"""Training compute and time, cost per token, buy-vs-rent break-even, serving fleet size.

Each test names the published figure it reproduces and its tolerance.
"""

from __future__ import annotations

import pytest

from engine.sizing import (
    GB,
    TB,
    TFLOPS,
    break_even_hours,
    break_even_utilization,
    cost_per_million_tokens_owned_usd,
    cost_per_million_tokens_rented_usd,
    fleet_gpus,
    fleet_gpus_for_latency,
    gpu_hours,
    max_batch_for_latency,
    min_tokens_per_second_per_sequence,
    owned_cost_per_hour_usd,
    power_cost_per_hour_usd,
    replicas_needed,
    required_tokens_per_second,
    run_cost_usd,
    training_flops,
    training_seconds,
)


def test_six_pd_gpt3() -> None:
    """Transformer Math 101: C ~= 6PD. GPT-3 175B on 300B tokens: 3.14e23 FLOPs (Brown et al. 2020,
    Table D.1). Tolerance 1%. Full recomputation: 8PD (Narayanan et al. 2021)."""
    assert training_flops(175e9, 300e9) == pytest.approx(3.14e23, rel=0.01)
    assert training_flops(175e9, 300e9, recompute="full") == pytest.approx(8 / 6 * 3.15e23)
    assert training_flops(175e9, 300e9, recompute="selective") == training_flops(175e9, 300e9)


def test_llama_65b_training_time_and_gpu_hours() -> None:
    """LLaMA (Touvron et al. 2023, arXiv 2302.13971), Sec. 2.4: 65B at ~380 tokens/s/GPU on 2048 A100-80GB,
    1.4T tokens 'takes approximately 21 days'; Table 15: 1,022,362 GPU-hours. The MFU implied by 380
    tokens/s is 6 x 65.2e9 x 380 / 312e12 = 0.476. Tolerance 5% (days) and 3% (GPU-hours)."""
    mfu = 6 * 65.2e9 * 380 / 312e12
    flops = training_flops(65.2e9, 1.4e12)
    days = training_seconds(flops, 2048, 312 * TFLOPS, mfu=mfu) / 86400
    assert days == pytest.approx(21, rel=0.05)
    assert gpu_hours(flops, 312 * TFLOPS, mfu=mfu) == pytest.approx(1_022_362, rel=0.03)


def test_seed_002_on_demand_cost() -> None:
    """Guide G2, Q6: 3 years x 365 x 24 x 0.7 = 18,396 GPU-hours at $5.12 = $94,187. Tolerance $1."""
    assert run_cost_usd(3 * 365 * 24 * 0.7, 5.12) == pytest.approx(94_187, abs=1)


@pytest.mark.parametrize(
    ("capex", "tps", "tdp"),
    [(700, 65, 350), (1600, 70, 450), (8000, 114, 400), (30000, 239, 700)],
    ids=["rtx-3090", "rtx-4090", "a100-40gb", "h100-sxm"],
)
def test_seed_002_cost_per_1m_tokens(capex: float, tps: float, tdp: float) -> None:
    """Guide G2, 'Cost Per 1M Tokens Analysis': its cost_per_1m_tokens() transcribed (3-year life,
    $0.12/kWh, 70% utilization, power billed around the clock) against ours. Tolerance 1e-9 relative."""
    lifetime_s = 3.0 * 365 * 24 * 3600
    per_s = capex / lifetime_s + tdp / (1000 * 3600) * 0.12
    seed = per_s / (tps * 0.70) * 1e6
    assert cost_per_million_tokens_owned_usd(capex, tps, tdp, utilization=0.7) == pytest.approx(
        seed, rel=1e-9
    )


def test_rented_cost_per_token() -> None:
    """$2/h at 1,000 tokens/s fully used = $0.556 per 1M tokens; half used doubles it. Exact."""
    assert cost_per_million_tokens_rented_usd(2.0, 1000) == pytest.approx(2.0 / 3.6)
    assert cost_per_million_tokens_rented_usd(2.0, 1000, utilization=0.5) == pytest.approx(4.0 / 3.6)


def test_seed_001_break_even_hours() -> None:
    """Guide G1's table: RTX 4090 $1,600 / $0.40/h = ~4,000 h; A100 80GB $15,000 / $4/h = ~3,750 h;
    8x A100 $150,000 / $32/h = ~4,700 h (power ignored). Tolerance 1%."""
    assert break_even_hours(1600, 0.40) == pytest.approx(4000, rel=0.01)
    assert break_even_hours(15000, 4.0) == pytest.approx(3750, rel=0.01)
    assert break_even_hours(150000, 32.0) == pytest.approx(4700, rel=0.01)


def test_break_even_with_power_and_utilization() -> None:
    """Guide G2's A100 ($12,000 vs $5.12/h, 400 W at $0.12/kWh): power 0.048 $/h; buying wins above
    2,366 h of use, 9.0% of a 3-year horizon. Renting below the power cost never breaks even. Exact."""
    power = power_cost_per_hour_usd(400)
    assert power == pytest.approx(0.048)
    assert break_even_hours(12000, 5.12, own_usd_per_hour=power) == pytest.approx(12000 / (5.12 - 0.048))
    u = break_even_utilization(12000, 5.12, own_usd_per_hour=power)
    assert u == pytest.approx(12000 / (5.12 - 0.048) / (3 * 8760))
    assert break_even_hours(12000, 0.01, own_usd_per_hour=power) is None
    assert break_even_utilization(12000, 0.01, own_usd_per_hour=power) is None
    assert owned_cost_per_hour_usd(12000, 400) == pytest.approx(12000 / 26280 + 0.048)


def test_seed_002_serving_fleet() -> None:
    """Guide G2, Q4: 1,000 req/min x 200 tokens = 3,333 tokens/s, 4,000 with 20% headroom; at 400 tokens/s
    per 2x A100 instance: 10 instances = 20 GPUs; p95 5 s for 200 tokens -> 40 tokens/s per request. Exact."""
    assert required_tokens_per_second(1000, 200, headroom=0) == pytest.approx(3333.33, abs=0.01)
    assert required_tokens_per_second(1000, 200) == pytest.approx(4000)
    assert replicas_needed(4000, 400) == 10
    assert fleet_gpus(1000, 200, 400, gpus_per_replica=2) == 20
    assert min_tokens_per_second_per_sequence(200, 5) == 40


def test_seed_002_latency_target_unreachable_in_fp16() -> None:
    """Guide G2, Q4 says 40 tokens/s per request is 'achievable' for 70B FP16 on 2x A100 80GB; its own
    bandwidth table says otherwise: 4 TB/s / 140 GB = 28.6 tokens/s at 100% efficiency, so no batch meets
    it. INT4 (36.4 GB) on the same pair does, up to batch 45, where compute (624 TFLOPS x 0.4) binds before
    bandwidth (101 sequences). Exact."""
    f = 2 * 69e9
    assert (
        max_batch_for_latency(40, f, 140 * GB, 0.33 * GB, 624 * TFLOPS, 4 * TB, bandwidth_efficiency=1.0) == 0
    )
    batch = max_batch_for_latency(40, f, 36.4 * GB, 0.33 * GB, 624 * TFLOPS, 4 * TB)
    by_compute = 624e12 * 0.4 / (40 * f)
    by_memory = (4e12 * 0.7 / 40 - 36.4e9) / 0.33e9
    assert batch == int(min(by_compute, by_memory)) == 45
    assert max_batch_for_latency(40, f, 36.4 * GB, 0.33 * GB, 624 * TFLOPS, 4 * TB, max_batch=16) == 16


def test_fleet_for_latency_target() -> None:
    """Guide G2 Q4 load (1,000 req/min, 200 tokens, 5 s) served by 70B int4 on 2x A100 (624 TFLOPS, 4 TB/s
    combined): batch 45 per replica at the 40 tokens/s floor, replica step max(compute 24.9 ms, memory
    18.3 ms) -> 1,808 tokens/s -> 3 replicas -> 6 GPUs. FP16 cannot meet it: None. Exact."""
    args = (1000, 200, 5, 2 * 69e9)
    gpus = fleet_gpus_for_latency(*args, 36.4 * GB, 0.33 * GB, 624 * TFLOPS, 4 * TB, gpus_per_replica=2)
    step = max(45 * 2 * 69e9 / (624e12 * 0.4), (36.4e9 + 45 * 0.33e9) / (4e12 * 0.7))
    assert gpus == 2 * -(-4000 // (45 / step))
    assert gpus == 6
    fp16 = fleet_gpus_for_latency(
        *args, 140 * GB, 0.33 * GB, 624 * TFLOPS, 4 * TB, gpus_per_replica=2, bandwidth_efficiency=1.0
    )
    assert fp16 is None


def test_cost_validation() -> None:
    with pytest.raises(ValueError, match="recompute"):
        training_flops(7e9, 1e12, recompute="partial")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="utilization"):
        cost_per_million_tokens_owned_usd(1600, 70, 450, utilization=0)
    with pytest.raises(ValueError, match="n_gpus"):
        training_seconds(1e20, 0, 1e12)
    with pytest.raises(ValueError, match="capex_usd"):
        break_even_hours(-1, 2.0)


def test_break_even_with_a_vanishing_margin_is_never() -> None:
    """capex / (rent - own) overflows to infinity for a margin near zero: that is 'never'."""
    assert break_even_hours(1e10, 1e-300, own_usd_per_hour=0.0) is None

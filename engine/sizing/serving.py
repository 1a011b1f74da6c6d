"""Serving fleet size: the token rate a request load needs, the per-sequence speed a latency target needs,
the largest batch that still meets it, and how many replicas (and GPUs) carry the load.

Worked example (guide G2, Q4): 1,000 requests/min x 200 output tokens = 3,333 tokens/s, 4,000 with 20%
burst headroom; at 400 tokens/s per 2-GPU replica that is 10 replicas, 20 GPUs; a 5 s target for 200 tokens
needs 40 tokens/s per sequence. Prefill time and queueing are not modelled (decode-only latency).
"""

from __future__ import annotations

import math

from engine.sizing._checks import check_fraction, check_non_negative, check_positive, check_positive_int
from engine.sizing.conventions import DECODE_BANDWIDTH_EFFICIENCY, MFU, SERVING_HEADROOM

__all__ = [
    "fleet_gpus",
    "fleet_gpus_for_latency",
    "max_batch_for_latency",
    "min_tokens_per_second_per_sequence",
    "replicas_needed",
    "required_tokens_per_second",
]


def required_tokens_per_second(
    requests_per_minute: float, output_tokens_per_request: float, *, headroom: float = SERVING_HEADROOM
) -> float:
    """Output-token rate a load requires (tokens/s).

    Formula: ``requests_per_minute / 60 x output_tokens x (1 + headroom)``; headroom 0.2 (guide G2, Q4).
    """
    rpm = check_positive("requests_per_minute", requests_per_minute)
    out = check_positive("output_tokens_per_request", output_tokens_per_request)
    return rpm / 60.0 * out * (1.0 + check_non_negative("headroom", headroom))


def min_tokens_per_second_per_sequence(output_tokens_per_request: float, latency_target_s: float) -> float:
    """Decode speed each sequence needs to finish within the latency target (tokens/s).

    Formula: ``output_tokens / latency_target_s`` (guide G2, Q4: 200 tokens in 5 s -> 40 tokens/s).
    """
    out = check_positive("output_tokens_per_request", output_tokens_per_request)
    return out / check_positive("latency_target_s", latency_target_s)


def replicas_needed(required_tps: float, replica_tps: float) -> int:
    """Serving replicas to carry ``required_tps`` (count): ``ceil(required_tps / replica_tps)``."""
    need = check_positive("required_tps", required_tps)
    return math.ceil(need / check_positive("replica_tps", replica_tps))


def fleet_gpus(
    requests_per_minute: float,
    output_tokens_per_request: float,
    replica_tps: float,
    *,
    gpus_per_replica: int = 1,
    headroom: float = SERVING_HEADROOM,
) -> int:
    """GPUs a serving fleet needs (count).

    Formula: ``replicas_needed(required_tokens_per_second(...), replica_tps) x gpus_per_replica``.
    Guide G2, Q4: 1,000 req/min, 200 tokens, 400 tokens/s per 2-GPU replica -> 20 GPUs.
    """
    need = required_tokens_per_second(requests_per_minute, output_tokens_per_request, headroom=headroom)
    return replicas_needed(need, replica_tps) * check_positive_int("gpus_per_replica", gpus_per_replica)


def max_batch_for_latency(
    min_tokens_per_s_per_sequence: float,
    flops_per_token: float,
    weight_bytes_read: float,
    kv_bytes_per_sequence: float,
    peak_flops_per_s: float,
    memory_bandwidth_bytes_per_s: float,
    *,
    mfu: float = MFU,
    bandwidth_efficiency: float = DECODE_BANDWIDTH_EFFICIENCY,
    max_batch: int | None = None,
) -> int:
    """Largest decode batch whose per-sequence speed still meets the target (count; 0 if even batch 1 fails).

    Formula: the roofline step ``max(B f / (F mfu), (W + B kv) / (BW eff))`` must not exceed ``1 / r``:
    ``B <= F mfu / (r f)`` and ``B <= (BW eff / r - W) / kv``; capped by ``max_batch`` (e.g. the KV-cache
    limit from :func:`engine.sizing.inference_memory.max_concurrent_sequences`). A replica's throughput is
    then ``B x r`` tokens/s or more.
    """
    r = check_positive("min_tokens_per_s_per_sequence", min_tokens_per_s_per_sequence)
    f = check_positive("flops_per_token", flops_per_token)
    w = check_positive("weight_bytes_read", weight_bytes_read)
    kv = check_non_negative("kv_bytes_per_sequence", kv_bytes_per_sequence)
    compute = check_positive("peak_flops_per_s", peak_flops_per_s) * check_fraction("mfu", mfu)
    bandwidth = check_positive("memory_bandwidth_bytes_per_s", memory_bandwidth_bytes_per_s) * check_fraction(
        "bandwidth_efficiency", bandwidth_efficiency
    )
    cap = None if max_batch is None else check_positive_int("max_batch", max_batch)
    by_compute = compute / (r * f)
    spare = bandwidth / r - w
    if spare < 0:
        return 0
    by_memory = spare / kv if kv > 0 else by_compute
    batch = math.floor(min(by_compute, by_memory))
    if cap is not None:
        batch = min(batch, cap)
    return max(batch, 0)


def fleet_gpus_for_latency(
    requests_per_minute: float,
    output_tokens_per_request: float,
    latency_target_s: float,
    flops_per_token: float,
    weight_bytes_read: float,
    kv_bytes_per_sequence: float,
    peak_flops_per_s: float,
    memory_bandwidth_bytes_per_s: float,
    *,
    gpus_per_replica: int = 1,
    max_batch: int | None = None,
    headroom: float = SERVING_HEADROOM,
    mfu: float = MFU,
    bandwidth_efficiency: float = DECODE_BANDWIDTH_EFFICIENCY,
) -> int | None:
    """GPUs needed to serve a load within a decode-latency target (count); ``None`` if no batch meets it.

    Formula: ``r = output_tokens / latency_target_s``; ``B = max_batch_for_latency(r, ...)``; a replica
    (``gpus_per_replica`` GPUs whose combined peak FLOPS and bandwidth are passed) then serves
    ``B / step(B)`` tokens/s with ``step(B) = max(B f / (F mfu), (W + B kv) / (BW eff))``; GPUs =
    ``ceil(required_tokens_per_second / that) x gpus_per_replica``. Sources: guide G2 Q4 (load, headroom,
    latency); roofline as in :func:`engine.sizing.throughput.decode_step_seconds`.
    """
    r = min_tokens_per_second_per_sequence(output_tokens_per_request, latency_target_s)
    batch = max_batch_for_latency(
        r,
        flops_per_token,
        weight_bytes_read,
        kv_bytes_per_sequence,
        peak_flops_per_s,
        memory_bandwidth_bytes_per_s,
        mfu=mfu,
        bandwidth_efficiency=bandwidth_efficiency,
        max_batch=max_batch,
    )
    if batch < 1:
        return None
    compute = batch * flops_per_token / (peak_flops_per_s * mfu)
    memory = (weight_bytes_read + batch * kv_bytes_per_sequence) / (
        memory_bandwidth_bytes_per_s * bandwidth_efficiency
    )
    replica_tps = batch / max(compute, memory)
    return fleet_gpus(
        requests_per_minute,
        output_tokens_per_request,
        replica_tps,
        gpus_per_replica=gpus_per_replica,
        headroom=headroom,
    )

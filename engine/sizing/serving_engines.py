"""How fast a serving engine decodes and prefills, and how much of the GPU it takes: one profile per
engine, each figure measured or published, with the band its decode predictions are held to.

A decode step streams the weights each GPU holds and the KV cache of every sequence in flight:
``step = max(layers x dispatch, bytes / (bandwidth x e_bw) + FLOPs / (peak x e_decode) + MoE layers x
t_moe) + tensor-parallel all-reduces``. ``dispatch`` is the host's time to launch one layer's kernels,
which bounds an eager stack; engines that replay CUDA graphs have none. ``t_moe`` is the fixed cost of
one mixture-of-experts layer per step (routing, sorting tokens to experts, a grouped GEMM over small
expert matrices), which the active-parameter roofline leaves out and which sets MoE decode speed at
small batches. Prefill is compute bound: ``tokens x FLOPs per token / (peak x e_prefill)``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

from engine.sizing._checks import check_choice, check_non_negative_int, check_positive_int
from engine.sizing.shape import TransformerShape

__all__ = [
    "ENCODER_EFFICIENCY",
    "ENGINES",
    "Engine",
    "EngineProfile",
    "moe_layer_seconds",
    "profile",
    "workspace_bytes",
]

Engine = Literal["vllm", "sglang", "hf-static-compile", "hf-eager"]
ENGINES: tuple[str, ...] = get_args(Engine)

ENCODER_EFFICIENCY = 0.35
"""Share of the dense peak an embedding server reaches encoding batches of short documents: Text
Embeddings Inference 0.6 encodes 0.54 requests/s of 256 sentences (115,000 tokens) with bge-large-en-v1.5
(0.335B, 0.69 GFLOP a token) on one L4 (121 dense bf16 TFLOP/s): 62k tokens/s, 0.35 of the peak
(michaelfeil/infinity, docs/benchmarks)."""

MOE_LAYER_SECONDS = 102e-6
"""One MoE layer's fixed cost per decode step on one GPU: Qwen3-30B-A3B in bf16 on an A100 under vLLM
decodes at 9.6 ms per token at batch 1 (Tenstorrent tt-inference-server GPU reference runs, issue 340),
of which streaming its 6.1 GB of active weights at 0.64 x 2,039 GB/s takes 4.7 ms: 4.9 ms over 48 MoE
layers. gpt-oss-120b on one H100 then comes out at ~200 tokens/s, as reported."""
MOE_TP_GROWTH = 0.59
"""Growth of that cost per extra tensor-parallel GPU: DeepSeek-V3 in fp8 on 8 H200s under SGLang
decodes at 30.3 tokens/s at batch 1 (SGLang PR 2643, TP 8, CUDA graphs), 30.3 ms of its 33 ms step
beyond streaming (1.5 ms) and all-reduces (1.2 ms): 522 us per MoE layer, 5.1x the one-GPU figure
(expert matrices split eight ways, an all-reduce and synchronisation per layer)."""


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """One engine's measured behaviour."""

    name: Engine
    bandwidth_efficiency: float
    """share of peak memory bandwidth the weights and KV cache stream at"""
    decode_compute_efficiency: float
    """share of dense peak FLOPS a decode step's thin matmuls reach (added to the streaming time)"""
    prefill_efficiency: float
    """share of dense peak FLOPS prompt processing reaches"""
    layer_dispatch_s: float
    """host time to launch one layer's kernels per step (0 with CUDA graphs)"""
    memory_utilization: float
    """share of the GPU's memory the engine allots itself (weights, activations, KV cache); 1: none is
    set aside, and a plan keeps the training headroom free"""
    batched_tokens: int
    """tokens one forward pass takes at most, which its activation workspace is sized for (0: the
    sequences' prompts, as a plain generate does)"""
    cuda_graphs: bool
    """kernels replayed from CUDA graphs, whose memory pool the engine holds beside the tensors"""
    band: tuple[float, float]
    """predicted / measured decode tokens/s this profile is held to"""
    source: str


_VLLM = EngineProfile(
    name="vllm",
    batched_tokens=8192,
    cuda_graphs=True,
    # SGLang PR 1401: Llama-3-8B bf16, batch 1, 141.6 tokens/s on an H100: the 15.0 GB a step reads
    # (the weights less the embedding, a lookup) x 141.6 / 3.35 TB/s = 0.635; gpt-fast reads
    # Llama-3.1-8B on an A100 at 1,411 of 2,039 GB/s (0.69) counting the embedding.
    bandwidth_efficiency=0.64,
    decode_compute_efficiency=0.4,
    # 8B-class prefill: 32k tokens/s on an H200 (the team's measurement cited in the calibration
    # issue) = 32,000 x 16.4 GFLOP / 989 TFLOP/s.
    prefill_efficiency=0.53,
    layer_dispatch_s=0.0,
    # vLLM EngineArgs.gpu_memory_utilization 0.9 (0.92 in the newest releases, vllm/config/cache.py)
    memory_utilization=0.9,
    band=(0.65, 1.35),
    source="vLLM / SGLang with CUDA graphs: SGLang PR 1401 (Llama-3-8B bf16 batch 1), gpt-fast README",
)
_HF_STATIC = EngineProfile(
    name="hf-static-compile",
    batched_tokens=0,
    cuda_graphs=True,
    # data/calibration/h200-2026-11-26.json: Qwen3-8B, static cache, torch.compile + CUDA graphs:
    # 7.45 ms per step at batch 1 and 11.99 ms at batch 32 on an H200.
    bandwidth_efficiency=0.44,
    decode_compute_efficiency=0.14,
    prefill_efficiency=0.53,
    layer_dispatch_s=0.0,
    memory_utilization=1.0,
    band=(0.75, 1.25),
    source="data/calibration/h200-2026-11-26.json (Hugging Face generate, static cache, compiled)",
)
_PROFILES: dict[str, EngineProfile] = {
    "vllm": _VLLM,
    # the same kernels' class; SGLang's --mem-fraction-static default for large GPUs is 0.88
    "sglang": replace(
        _VLLM,
        name="sglang",
        memory_utilization=0.88,
        source="SGLang PR 1401 (Llama-3-8B bf16 batch 1, triton backend, CUDA graphs)",
    ),
    "hf-static-compile": _HF_STATIC,
    # data/calibration/h200-2026-11-26.json: Qwen3-8B eager decode takes 58.4 ms per step at batch 1
    # and 55.4 ms at 32, whatever the batch: the host launching 36 layers' kernels, 1.6 ms each.
    "hf-eager": replace(
        _HF_STATIC,
        name="hf-eager",
        cuda_graphs=False,
        layer_dispatch_s=1.6e-3,
        band=(0.6, 1.4),
        source="data/calibration/h200-2026-11-26.json (Hugging Face generate, eager, dynamic cache)",
    ),
}


def profile(engine: Engine) -> EngineProfile:
    """The engine's profile (ValueError for an unknown engine)."""
    return _PROFILES[check_choice("engine", engine, ENGINES)]


def moe_layer_seconds(tensor_parallel: int = 1) -> float:
    """Fixed cost of one MoE layer per decode step (s): ``102 us x (1 + 0.59 (t - 1))`` (see
    :data:`MOE_LAYER_SECONDS` and :data:`MOE_TP_GROWTH`)."""
    t = check_positive_int("tensor_parallel", tensor_parallel)
    return MOE_LAYER_SECONDS * (1.0 + MOE_TP_GROWTH * (t - 1))


CUDA_GRAPH_POOL_BYTES = 0.4e9
"""The memory pool of captured CUDA graphs: vLLM logs 'Estimated CUDA graph memory: 0.36 GiB' for a
typical model (vLLM PR 30515); captures run 0.3-1 GiB."""


def workspace_bytes(
    shape: TransformerShape, batched_tokens: int, sequences: int, *, tensor_parallel: int = 1
) -> float:
    """The activations a serving forward pass holds at its peak, per GPU (bytes).

    Formula: ``batched_tokens x 2 x (3 i + 2 q + 2 kv) / t`` (one layer's widest transients in 16-bit:
    the MLP's gate and up outputs and their product, the queries, keys, values and attention output;
    MoE: the experts a token visits) ``+ sequences x V x 16`` (the last positions' logits in fp32 and
    the sampler's probabilities and sorted copies), plus the pool of captured CUDA graphs where the
    engine uses them (:data:`CUDA_GRAPH_POOL_BYTES`, added by the caller). vLLM profiles exactly this:
    a forward of ``max_num_batched_tokens`` (8,192 with chunked prefill) whose peak it reserves
    (vLLM, ``determine_available_memory``: 'PyTorch activation peak memory takes 2.53GiB' for a 7.5 GiB
    model, vLLM issue 11251).
    """
    tokens = check_non_negative_int("batched_tokens", batched_tokens)
    seqs = check_positive_int("sequences", sequences)
    t = check_positive_int("tensor_parallel", tensor_parallel)
    width = shape.experts_per_token * shape.expert_size if shape.is_moe else shape.intermediate_size
    per_token = 2.0 * (3 * width + 2 * shape.q_dim + 2 * shape.kv_dim) / t
    return tokens * per_token + seqs * shape.vocab_size * 16.0

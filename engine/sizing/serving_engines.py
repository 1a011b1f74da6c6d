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
from engine.sizing.training_speed import HALF_WIDTH

__all__ = [
    "ENCODER_EFFICIENCY",
    "ENGINES",
    "Engine",
    "EngineProfile",
    "encoder_efficiency",
    "moe_layer_seconds",
    "moe_pass_seconds",
    "profile",
    "workspace_bytes",
]

Engine = Literal["vllm", "sglang", "hf-static-compile", "hf-eager"]
ENGINES: tuple[str, ...] = get_args(Engine)

ENCODER_EFFICIENCY = 0.40
"""Share of the dense peak an embedding server reaches encoding batches of short documents with a
1,024-wide encoder, taken between two bounds measured on different GPUs. A server on an L4: Text
Embeddings Inference 0.6 encodes 0.54 requests/s of 256 sentences (115,000 tokens) with bge-large-en-v1.5
(0.335B, 0.69 GFLOP a token) on one L4 (121 dense bf16 TFLOP/s): 62k tokens/s, 0.35 of the peak
(michaelfeil/infinity, docs/benchmarks), where the L4's 300 GB/s leave the element-wise kernels
slower beside its FLOPS than on a Hopper. The bare forward pass on Hoppers: 0.46-0.47 at that width
on an H100, 0.49 on an H200 (data/calibration/h100-2026-11-26.json, h200-2026-11-26-b.json), without
tokenizing or batching. No measurement of a server on a Hopper is at hand; 0.40 sits between the two,
so either is within 15-20% of a prediction."""
ENCODER_REFERENCE_WIDTH = 1024
"""the hidden size ENCODER_EFFICIENCY was measured at (bge-large-en-v1.5)"""
ENCODER_HALF_WIDTH = 2272
"""Hidden size at which an encoder's forward pass reaches half the share it would on infinitely wide
layers (fitted to the H100 encode runs, data/calibration/h100-2026-11-26.json)"""
PREFILL_ASYMPTOTE = 1.1
"""A decoder's prompts are read at ``min(prefill_efficiency, 1.1 x h / (h + 4,400))`` of the dense peak,
the training curve's width (`training_speed.HALF_WIDTH`): narrow layers leave the GPU to element-wise
kernels, as in training. Measured on an H200 in eager mode (data/calibration/h200-2026-11-26-b.json):
0.37 of the peak at h 2,048 (Qwen3-1.7B, 8 x 1,024 tokens), 0.41 at 2,560 (Qwen3-4B), 0.53-0.54 at
4,096 and 5,120 (Qwen3-8B, Qwen3-32B), 0.59 at 3,584 on an H100 (Qwen2.5-7B); the curve gives 0.35,
0.40, 0.53 (capped) and 0.49."""
ENCODER_CEILING = 0.53
"""no encoder is taken to beat a decoder's prefill share (`prefill_efficiency` of vLLM)"""

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
    prefill_dispatch_s: float | None = None
    """host time to launch one layer's kernels when reading a prompt (None: `layer_dispatch_s`)"""
    moe_prefill_efficiency: float | None = None
    """share of dense peak FLOPS a mixture-of-experts model's prompt processing reaches (None: the
    dense `prefill_efficiency`)"""
    moe_dispatch_factor: float = 1.0
    """how much longer a mixture-of-experts layer takes to launch than a dense layer of its family
    (routing, sorting tokens to experts and two grouped GEMMs are more kernels than one gated MLP);
    matters only where `layer_dispatch_s` does"""

    @property
    def prefill_launch_s(self) -> float:
        """host time to launch one layer's kernels when reading a prompt"""
        return self.layer_dispatch_s if self.prefill_dispatch_s is None else self.prefill_dispatch_s

    def launch_seconds(self, shape: TransformerShape, *, prefill: bool = False) -> float:
        """host time to launch a forward pass's layers (a decode step's, or with `prefill` a prompt's):
        one layer's dispatch times the layers, QK_NORM_DISPATCH_FACTOR more where QK-norm adds kernels,
        and each mixture-of-experts layer's experts `moe_dispatch_factor - 1` of a QK-norm layer more.
        The experts' kernels (routing, sorting, two grouped GEMMs) are the same with or without QK-norm,
        so they are added to a layer rather than scaling it: a Qwen3 MoE layer is 1.49 dense Qwen3
        layers, a gpt-oss one (no QK-norm) 1.60 dense Llama-style layers."""
        per_layer = self.prefill_launch_s if prefill else self.layer_dispatch_s
        layer = QK_NORM_DISPATCH_FACTOR if shape.qk_norm else 1.0
        experts = (self.moe_dispatch_factor - 1.0) * QK_NORM_DISPATCH_FACTOR
        return per_layer * (shape.n_layers * layer + shape.n_moe_layers * experts)

    def prefill_share(self, *, moe: bool, hidden_size: int) -> float:
        """share of dense peak FLOPS this engine's prompt processing reaches with layers `hidden_size`
        wide (PREFILL_ASYMPTOTE)"""
        if moe and self.moe_prefill_efficiency is not None:
            return self.moe_prefill_efficiency
        h = check_positive_int("hidden_size", hidden_size)
        return min(self.prefill_efficiency, PREFILL_ASYMPTOTE * h / (h + HALF_WIDTH))


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
HF_EAGER_LAYER_DISPATCH_S = 0.9e-3
"""Host time to launch one Llama-style decoder layer's kernels in Hugging Face eager mode, per forward
pass (QK_NORM_DISPATCH_FACTOR more with QK-norm). The host decides it, whatever the batch: Llama-family
layers take 0.60-0.61 ms on one H200 machine (Llama-3.2-3B, SmolLM2-1.7B) and 0.72 ms on one H100 machine
(Llama-3.1-8B); Qwen3 layers take 0.75-0.77 ms on the first, 0.83-0.85 ms on the second and 1.54-1.62 ms
on another H200 machine (Qwen3-8B) (data/calibration/h200-2026-11-26-c.json, h100-2026-11-26.json,
h200-2026-11-26.json). 0.9 ms (1.1 ms for Qwen3) sits between the hosts measured.

The host's speed is not the GPU's, and it varies from machine to machine and from minute to minute:
the same decode (Qwen3-8B, batch 1, a 128-token prompt, 64 new tokens, the same stack) took 35.9 ms a
step on one H200 machine and 67.3 ms on another the same hour (h200-2026-11-27-b.json,
h200-2026-11-27.json); on one machine a bare decode forward of Llama-3.1-8B took 28.2 and 43.9 ms a
minute apart, launching the same 1,462 kernels with the GPU busy 6.2 and 6.6 ms of it
(h200-2026-11-27-b.json). HF_EAGER_BAND is that spread: a prediction for an eager stack is good to
within it on whatever host runs it, and no closer."""
HF_EAGER_BAND = (0.6, 1.75)
"""predicted / measured decode tokens/s an hf-eager prediction is held to: 50 eager decodes on nine
machines, nine model families, spread over 0.65-1.72 (data/calibration), the hosts' speed
(HF_EAGER_LAYER_DISPATCH_S). Mixture-of-experts decodes at batch 16 and more fall outside it
(data/calibration-open/README.md)."""
QK_NORM_DISPATCH_FACTOR = 1.22
"""A layer that normalises its queries and keys (Qwen3's QK-norm: two more RMSNorms, each a handful of
element-wise kernels) takes this much longer to launch: 0.76 against 0.605 ms on one H200 host (1.26),
0.85 against 0.72 ms on one H100 host (1.18)."""

HF_MOE_DISPATCH_FACTOR = 1.49
"""A Qwen3 mixture-of-experts layer launches 1.49 times the kernels of a dense Qwen3 layer in
transformers 5.17, whose experts default to `grouped_mm` (two grouped GEMMs over all of a layer's
experts, whatever the batch; the loop over the experts a batch visits is the `eager` choice, 3.6 to 7.8
times slower): one eager decode forward of Qwen3-30B-A3B launches 4,390 CUDA kernels at batch 1 and 32
(4,438 after 1,024-token prompts), 91.5 a layer over 48 layers, where Qwen3-8B launches 2,218, 61.6 a
layer over 36 (torch.profiler, data/calibration/h200-2026-11-27-b.json). The GPU is busy 10-29 ms of
the 76-139 ms the host takes for them, so the step is the host's launches at every batch measured:
Qwen3-30B-A3B steps of 50.9-122 ms at batch 1-32 on five machines (h100-2026-11-26.json,
h200-2026-11-26-b.json, h200-2026-11-26-d.json, h200-2026-11-27.json, h200-2026-11-27-b.json) against
78.7 ms predicted."""

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
    # generate compiles the decode step only; the prompt is read eagerly: a 128-token prompt takes
    # 48.7 ms on an H100 (36 layers), as in eager mode (data/calibration/h100-2026-11-26.json)
    prefill_dispatch_s=HF_EAGER_LAYER_DISPATCH_S,
    # Hugging Face's mixture-of-experts layers read a prompt at 0.15 of the peak where a dense model
    # reaches 0.53: 32 x 128 prompt tokens of Qwen3-30B-A3B at 24.5k tokens/s on an H100
    # (data/calibration/h100-2026-11-26.json), 26.6k on an H200 (h200-2026-11-27.json)
    moe_prefill_efficiency=0.15,
    moe_dispatch_factor=HF_MOE_DISPATCH_FACTOR,
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
    # eager decode is the host launching each layer's kernels, whatever the batch
    # (HF_EAGER_LAYER_DISPATCH_S)
    "hf-eager": replace(
        _HF_STATIC,
        name="hf-eager",
        cuda_graphs=False,
        layer_dispatch_s=HF_EAGER_LAYER_DISPATCH_S,
        band=HF_EAGER_BAND,
        source="data/calibration/h200-2026-11-26.json and h100-2026-11-26.json (Hugging Face generate, "
        "eager, dynamic cache)",
    ),
}


def profile(engine: Engine) -> EngineProfile:
    """The engine's profile (ValueError for an unknown engine)."""
    return _PROFILES[check_choice("engine", engine, ENGINES)]


def encoder_efficiency(hidden_size: int) -> float:
    """Share of the dense peak an embedding server reaches with an encoder `hidden_size` wide (fraction).

    Formula: ``min(0.53, 0.35 x w(h) / w(1,024))``, ``w(h) = h / (h + 2,272)``: the TEI figure at
    bge-large's width (:data:`ENCODER_EFFICIENCY`), scaled by width as the bare forward pass scales on
    an H100: 0.20-0.23 at h 384 (all-MiniLM-L6, bge-small), 0.39 at 768 (bge-base), 0.45-0.46 at 1,024
    (bge-large, bge-m3) (data/calibration/h100-2026-11-26.json): narrow layers leave the GPU to
    element-wise kernels.
    """
    h = check_positive_int("hidden_size", hidden_size)
    reference = ENCODER_REFERENCE_WIDTH / (ENCODER_REFERENCE_WIDTH + ENCODER_HALF_WIDTH)
    return min(ENCODER_CEILING, ENCODER_EFFICIENCY * h / (h + ENCODER_HALF_WIDTH) / reference)


def moe_pass_seconds(shape: TransformerShape, tensor_parallel: int = 1) -> float:
    """Fixed GPU cost of a decode step's MoE layers (s): ``MoE layers x`` :func:`moe_layer_seconds`
    (routing, sorting tokens to experts, grouped GEMMs over small expert matrices); 0 for a dense
    model. An eager engine's host launches, which take longer, are `EngineProfile.launch_seconds`."""
    if not shape.is_moe:
        return 0.0
    return shape.n_moe_layers * moe_layer_seconds(tensor_parallel)


def moe_layer_seconds(tensor_parallel: int = 1) -> float:
    """Fixed cost of one MoE layer per decode step (s): ``102 us x (1 + 0.59 (t - 1))`` (see
    :data:`MOE_LAYER_SECONDS` and :data:`MOE_TP_GROWTH`)."""
    t = check_positive_int("tensor_parallel", tensor_parallel)
    return MOE_LAYER_SECONDS * (1.0 + MOE_TP_GROWTH * (t - 1))


CUDA_GRAPH_POOL_BYTES = 0.4e9
"""The memory pool of captured CUDA graphs: vLLM logs 'Estimated CUDA graph memory: 0.36 GiB' for a
typical model (vLLM PR 30515); captures run 0.3-1 GiB."""


def workspace_bytes(
    shape: TransformerShape,
    batched_tokens: int,
    sequences: int,
    *,
    tensor_parallel: int = 1,
    logits: bool = True,
) -> float:
    """The activations a serving forward pass holds at its peak, per GPU (bytes).

    Formula: ``batched_tokens x 2 x (m i + 2 q + 2 kv) / t`` (one layer's widest transients in 16-bit:
    the MLP's outputs, m = 3 for a gated MLP (gate, up and their product), 2 for a dense one (the up
    projection and its activation); the queries, keys, values and attention output; MoE: the experts a
    token visits) ``+ sequences x V x 16`` where the model has an LM head (`logits`: the last positions'
    logits in fp32 and the sampler's probabilities and sorted copies), plus the pool of captured CUDA
    graphs where the engine uses them (:data:`CUDA_GRAPH_POOL_BYTES`, added by the caller). vLLM profiles
    exactly this: a forward of ``max_num_batched_tokens`` (8,192 with chunked prefill) whose peak it
    reserves (vLLM, ``determine_available_memory``: 'PyTorch activation peak memory takes 2.53GiB' for a
    7.5 GiB model, vLLM issue 11251). An encoder, which has no LM head, peaks at its weights plus the
    first term: bge-m3 over 64 x 512 tokens held 0.74 GB beside its 1.14 GB of bf16 weights on an H100
    (data/calibration/h100-2026-11-26.json), where the formula gives 0.81 GB.
    """
    tokens = check_non_negative_int("batched_tokens", batched_tokens)
    seqs = check_positive_int("sequences", sequences)
    t = check_positive_int("tensor_parallel", tensor_parallel)
    width = shape.experts_per_token * shape.expert_size if shape.is_moe else shape.intermediate_size
    mlp_outputs = 3 if shape.mlp == "gated" else 2
    per_token = 2.0 * (mlp_outputs * width + 2 * shape.q_dim + 2 * shape.kv_dim) / t
    return tokens * per_token + (seqs * shape.vocab_size * 16.0 if logits else 0.0)

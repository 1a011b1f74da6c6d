"""How fast a serving engine decodes and prefills, and how much of the GPU it takes: one profile per
engine, each figure measured or published, with the band its decode predictions are held to.

A decode step streams the weights each GPU holds and the KV cache of every sequence in flight:
``step = max(layers x dispatch, bytes / (bandwidth x e_bw) + FLOPs / (peak x e_decode) + MoE layers x
t_moe) + tensor-parallel all-reduces``. ``dispatch`` is the host's time to launch one layer's kernels,
which bounds an eager stack; engines that replay CUDA graphs have none. ``t_moe`` is the fixed cost of
one mixture-of-experts layer per step (routing, sorting tokens to experts, a grouped GEMM over small
expert matrices), which the active-parameter roofline leaves out and which sets MoE decode speed at
small batches; an engine that gathers its experts (Hugging Face generate, MOE_GATHER_NOTE) streams
instead one copy of an expert per sequence and routed slot, three times over. Prefill is compute bound:
``tokens x (FLOPs per token / (peak x e_prefill) + norm bytes per token / bandwidth)``, the second term
for engines that run their norms as separate kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

from engine.sizing._checks import check_choice, check_non_negative_int, check_positive_int
from engine.sizing.shape import TransformerShape

__all__ = [
    "ENCODER_EFFICIENCY",
    "ENGINES",
    "MOE_GATHER_BANDWIDTH_EFFICIENCY",
    "MOE_GATHER_PASSES",
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
PREFILL_ASYMPTOTE = 0.8
PREFILL_HALF_WIDTH = 1000
"""A decoder's prompt matmuls run at ``min(prefill_efficiency, 0.8 x h / (h + 1,000))`` of the dense
peak (0.38 at h 896, 0.41 at 1,024, the 0.53 cap from about 1,960): narrow layers leave the GPU to
element-wise kernels, as in training. An eager engine adds its norms' traffic beside them
(PREFILL_NORM_BYTES). Fitted with it to the 58 eager prompt reads and 4 decoder-embedding encodes of
data/calibration (one H100, one H200): every one within its band, 0.19 rms in log; the reads the
host's launches bound set the extremes (0.69-1.67x). Qwen2.5-0.5B read 64 x 128 tokens on an H200 at
0.93x the prediction and Llama-3.2-1B 32 x 512 at 0.85x (h200-2026-11-27-f.json, h200-2026-11-26-d.json),
where the curve this replaces, ``1.1 x h / (h + 4,400)`` without the norms, was at 0.58x and 0.69x."""
PREFILL_NORM_BYTES = 80.0
"""Bytes an eager forward pass moves per element its RMSNorms normalise (upcast to fp32, square,
average, rescale, weight and cast back, with the rotary embedding beside a QK-norm): a third of the 240
a training step moves forward and backward (`training_speed.NORM_PASSES`)."""
MOE_PREFILL_SHARE = 0.5
"""A mixture-of-experts prompt's matmuls run at half the dense curve taken at the expert's width: its
experts are grouped GEMMs as wide as one expert. On H200s (h200-2026-11-27-f.json, -d.json, -b.json)
Mixtral 8x7B (experts 14,336 wide, 0.265 of the peak) read 8 x 128 tokens at 0.83x the prediction,
Qwen3-30B-A3B (768 wide, 0.174) 32 x 128 at 0.89-1.00x, DeepSeek-V2-Lite (1,408 wide, 0.234) 32 x 128 at
1.04x; gpt-oss-20b (2,880 wide), whose attention transformers runs eagerly, materialising the scores,
at 1.28-1.33x. A flat 0.15 of the peak, fitted to Qwen3-30B-A3B alone, read Mixtral at 0.49x."""
ENCODER_CEILING = 0.53
"""no encoder is taken to beat a decoder's prefill share (`prefill_efficiency` of vLLM)"""

MOE_LAYER_SECONDS = 92e-6
"""One MoE layer's fixed cost per decode step on one GPU: Qwen3-30B-A3B in bf16 on an A100 under vLLM
decodes at 9.6 ms per token at batch 1 (Tenstorrent tt-inference-server GPU reference runs, issue 340),
of which streaming its 6.1 GB of active weights at 0.80 x 2,039 GB/s takes 3.7 ms and the engine's step
(VLLM_STEP_OVERHEAD_S) 1.4 ms: 4.4 ms over 48 MoE layers. gpt-oss-120b on one H100 then comes out at 174
tokens/s, about 200 reported; DeepSeek-V2-Lite on one H100 under SGLang at 177 against 160.8 (SGLang PR
1401, CUDA graphs, batch 1)."""
MOE_TP_GROWTH = 0.64
"""Growth of that cost per extra tensor-parallel GPU: DeepSeek-V3 in fp8 on 8 H200s under SGLang
decodes at 30.3 tokens/s at batch 1 (SGLang PR 2643, TP 8, CUDA graphs), 29.1 ms of its 33 ms step
beyond streaming (1.1 ms), the engine's step (1.4 ms) and all-reduces (1.2 ms): 502 us per MoE layer,
5.5x the one-GPU figure (expert matrices split eight ways, an all-reduce and synchronisation per
layer)."""
VLLM_STEP_OVERHEAD_S = 1.4e-3
"""What a CUDA-graph serving engine's decode step costs beside the bytes it streams (s): launching the
replayed graph, sampling, and handing the new tokens to the scheduler. Fitted with its bandwidth share
(0.80) to eight batch-1 decodes: Llama-3-8B in bf16 on an H100 under SGLang, 7.06 ms a step (SGLang PR
1401, triton attention, CUDA graphs), and gpt-fast (torch.compile, CUDA graphs) on A100s power-limited to
330 W, Llama-2-7B on 1, 2, 4 and 8 GPUs at 104.9, 168.8, 254.0 and 328.4 tokens/s and Llama-2-70B on 2, 4
and 8 at 21.3, 38.0 and 62.5 (pytorch-labs/gpt-fast README): predicted at 0.96-1.17 of them, 6.6% rms.
A share of the bandwidth alone (0.64, which fits the H100 figure) put Llama-2-7B on 8 A100s at 1.58x
(517 tokens/s; the step's fixed part, not the 1.7 GB a GPU reads, bounds it there) and a small model
far above what an engine reaches: Qwen3-0.6B at 1,800 tokens/s a sequence on an H100, 536 with it.
A vLLM concurrency sweep of Mistral-7B on one RTX 4090 (256-token prompts, 128 new tokens; 210-1,190
output tokens/s at 4-48 requests, mushfiqrahman.dev, "vLLM capacity planning on an RTX 4090") reads at
0.84-0.89 of the prediction with the prompts' reads counted (0.78 without the step's fixed part)."""


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
    moe_prefill_share: float | None = None
    """the share of the dense prefill curve, taken at the expert's width, a mixture-of-experts model's
    prompts reach (MOE_PREFILL_SHARE; None: the dense curve at the hidden size)"""
    moe_dispatch_factor: float = 1.0
    """how much longer a mixture-of-experts layer takes to launch than a dense layer of its family
    (routing, sorting tokens to experts and two grouped GEMMs are more kernels than one gated MLP);
    matters only where `layer_dispatch_s` does"""
    step_overhead_s: float = 0.0
    """host time each decode step adds after the GPU's work (GENERATE_STEP_OVERHEAD_S), where the
    forward pass is replayed from a graph but the loop around it runs eagerly and waits for it"""
    prefill_norm_bytes: float = 0.0
    """bytes moved per element a prompt's norms normalise, where the engine runs them as separate
    element-wise kernels (PREFILL_NORM_BYTES; 0: fused into the matmuls' epilogues, as vLLM's are)"""
    moe_decode_gathers: bool = False
    """a decode step copies each routed token's expert weights before multiplying them (MOE_GATHER_NOTE),
    instead of streaming the experts the batch visits once"""

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
        layers, a gpt-oss one (no QK-norm) 1.60 dense Llama-style layers. Latent attention (DeepSeek)
        launches MLA_DISPATCH_FACTOR times a Llama layer's attention-and-MLP kernels."""
        per_layer = self.prefill_launch_s if prefill else self.layer_dispatch_s
        layer = QK_NORM_DISPATCH_FACTOR if shape.qk_norm else 1.0
        if shape.is_mla:  # latent attention: its projections, norms and rope split
            layer *= MLA_DISPATCH_FACTOR
        experts = (self.moe_dispatch_factor - 1.0) * QK_NORM_DISPATCH_FACTOR
        return per_layer * (shape.n_layers * layer + shape.n_moe_layers * experts)

    def prefill_share(self, *, hidden_size: int, expert_width: int | None = None) -> float:
        """share of dense peak FLOPS this engine's prompt processing reaches with layers `hidden_size`
        wide (PREFILL_ASYMPTOTE), or for a mixture of experts `expert_width` wide, `moe_prefill_share`
        of the curve at that width where the engine states one"""
        if expert_width is not None and self.moe_prefill_share is not None:
            return self.moe_prefill_share * self._dense_prefill_share(expert_width)
        return self._dense_prefill_share(hidden_size)

    def _dense_prefill_share(self, width: int) -> float:
        w = check_positive_int("width", width)
        return min(self.prefill_efficiency, PREFILL_ASYMPTOTE * w / (w + PREFILL_HALF_WIDTH))


_VLLM = EngineProfile(
    name="vllm",
    batched_tokens=8192,
    cuda_graphs=True,
    # the weights (less the embedding, a lookup) and KV cache stream at 0.80 of the bandwidth beside a
    # fixed 1.4 ms a step (VLLM_STEP_OVERHEAD_S): SGLang PR 1401 (Llama-3-8B, H100) and gpt-fast's
    # A100 runs on 1-8 GPUs
    bandwidth_efficiency=0.80,
    step_overhead_s=VLLM_STEP_OVERHEAD_S,
    decode_compute_efficiency=0.4,
    # 8B-class prefill: 32k tokens/s on an H200 (the team's measurement cited in the calibration
    # issue) = 32,000 x 16.4 GFLOP / 989 TFLOP/s.
    prefill_efficiency=0.53,
    layer_dispatch_s=0.0,
    # vLLM EngineArgs.gpu_memory_utilization 0.9 (0.92 in the newest releases, vllm/config/cache.py)
    memory_utilization=0.9,
    band=(0.65, 1.35),
    source=(
        "vLLM / SGLang with CUDA graphs: SGLang PR 1401 (Llama-3-8B bf16 batch 1), gpt-fast README "
        "(batch 1 on 1-8 A100s)"
    ),
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
"""predicted / measured decode tokens/s an hf-eager prediction is held to: 66 eager decodes of 25
models in eleven sittings, spread over 0.65-1.72 (data/calibration), the hosts' speed
(HF_EAGER_LAYER_DISPATCH_S). Mixture-of-experts decodes at batch 16 and more fell outside it until
generate's expert copies were counted (MOE_GATHER_NOTE)."""
MLA_DISPATCH_FACTOR = 1.33
"""A multi-head latent attention layer (DeepSeek-V2 and V3: compressed query and key-value projections,
their norms, the rope and no-rope halves split and joined) launches this much more than a Llama-style
layer: one eager decode forward of DeepSeek-V2-Lite (27 layers, 26 of them mixtures of experts)
launches 2,353-2,380 CUDA kernels where Llama-3.1-8B launches 1,462 over 32 layers; with its experts
counted as above, its layers are 1.33 Llama layers each (data/calibration/h200-2026-11-27-c.json, -d.json).
Without it, DeepSeek-V2-Lite at batch 16 decoded at 1.89x the prediction on a slow host
(h200-2026-11-27-g.json)."""
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

MOE_GATHER_PASSES = 3
"""Bytes a gathered expert moves per byte of its weights: read, copied out, read again by the matmul."""
MOE_GATHER_BANDWIDTH_EFFICIENCY = 0.95
"""Share of the peak bandwidth the gathers and the matmuls over their copies reach: Mixtral 8x7B's
generate step grew by 14.5-14.75 ms a sequence on an H200 (MOE_GATHER_NOTE), where its 67.6 GB of
gathers a sequence take 14.1 ms at the full 4.8 TB/s."""
MOE_GATHER_NOTE = (
    "Hugging Face generate (transformers 5.17) decodes a mixture-of-experts model by copying, for each "
    "token and each expert it is routed to, that expert's weights out of the stacked expert tensor and "
    "multiplying the copy by the one token (a gather, `gate_up_proj[expert_ids]`, as the `batched_mm` "
    "experts do): a step reads, writes and reads again one expert's weights per token and expert, "
    "whatever other tokens share it, and holds one layer's copies at once. On one H200, Mixtral 8x7B "
    "with 128-token prompts took 107, 165 and 283 ms a generate step at batch 4, 8 and 16, 14.5-14.75 ms "
    "more a sequence, where 2 experts x 32 layers x 352 MB x 3 passes is 14.1 ms at 4.8 TB/s; a loop of "
    "plain decode forwards over the same cache, which runs the grouped GEMM, took 54-63 ms at every "
    "batch. The step's peak held 0.74 GB beside the weights at batch 1 and 5.69 GB at batch 8 (2 and 16 "
    "copies of 352 MB), reached in the first layer's experts of the first decode step "
    "(data/calibration/h200-2026-11-27-f.json and a probe the same hour)."
)
"""Why a Hugging Face engine's MoE decode grows with the batch (`EngineProfile.moe_decode_gathers`)."""

GENERATE_STEP_OVERHEAD_S = 3.7e-3
"""What Hugging Face generate's loop adds to each step of a compiled, graph-replayed decode: the logits
processors, the next token's selection and append, the cache position's update and the stopping
check, which reads a flag back from the GPU, so the host waits for each step before it prepares the
next. Qwen3-8B with a static cache, compiled, at batch 1 and a 128-token prompt took 7.45 ms a step on
an H200 (4.8 TB/s) and 9.09 ms on an H100 (3.35 TB/s) (data/calibration/h200-2026-11-26.json,
h100-2026-11-26.json): reading its 16.4 GB at one efficiency e on both, 16.4 GB / e x (1/3.35 - 1/4.8)
= 1.64 ms gives e = 0.90 and leaves 3.7 ms a step that does not depend on the bandwidth. Without it,
0.44 of the bandwidth fitted the 8B alone and would put Qwen3-0.6B at about 1,700 tokens/s a
sequence, where the overhead caps it near 250."""

_HF_STATIC = EngineProfile(
    name="hf-static-compile",
    batched_tokens=0,
    cuda_graphs=True,
    # data/calibration/h200-2026-11-26.json and h100-2026-11-26.json: Qwen3-8B, static cache,
    # torch.compile + CUDA graphs, batch 1 and 32 (GENERATE_STEP_OVERHEAD_S): the weights and KV cache
    # stream at 0.90 of the bandwidth, the batch's matmuls reach 0.11 of the peak.
    bandwidth_efficiency=0.90,
    decode_compute_efficiency=0.11,
    step_overhead_s=GENERATE_STEP_OVERHEAD_S,
    prefill_efficiency=0.53,
    layer_dispatch_s=0.0,
    memory_utilization=1.0,
    band=(0.75, 1.25),
    source="data/calibration/h200-2026-11-26.json (Hugging Face generate, static cache, compiled)",
    # generate compiles the decode step only; the prompt is read eagerly: a 128-token prompt takes
    # 48.7 ms on an H100 (36 layers), as in eager mode (data/calibration/h100-2026-11-26.json)
    prefill_dispatch_s=HF_EAGER_LAYER_DISPATCH_S,
    # Hugging Face's mixture-of-experts layers read a prompt through grouped GEMMs as wide as an expert
    moe_prefill_share=MOE_PREFILL_SHARE,
    prefill_norm_bytes=PREFILL_NORM_BYTES,
    moe_dispatch_factor=HF_MOE_DISPATCH_FACTOR,
    moe_decode_gathers=True,
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
        # eager kernels stream and multiply less efficiently than compiled ones, and the host's
        # launches (which include generate's loop) bound the step: no separate overhead
        bandwidth_efficiency=0.44,
        decode_compute_efficiency=0.14,
        step_overhead_s=0.0,
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
    """Fixed cost of one MoE layer per decode step (s): ``92 us x (1 + 0.64 (t - 1))`` (see
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

"""What an eager PyTorch training step keeps for the backward pass, tensor by tensor: the activations of
a Hugging Face-class stack (``torch.autocast`` to bf16, SDPA attention, PEFT adapters) and the logits of
its causal-LM loss.

Korthikanti et al. 2022 (arXiv 2205.05198, Table 2) count ``34 s b h`` bytes per layer for a Megatron
GPT layer with fused kernels and 16-bit activations everywhere. An eager stack keeps more, and what it
keeps follows from three documented behaviours:

* Autocast casts a linear layer's input to bf16 **at each call** and caches casts of weights only
  (PyTorch, Automatic Mixed Precision, "autocast ... caches casts of leaf tensors that require grad");
  three projections reading one fp32 tensor therefore keep three bf16 copies of it. With fp32 weights
  the embeddings, and so the residual stream and the norms' outputs, stay fp32.
* Hugging Face's RMSNorm computes in fp32 (``hidden_states.to(torch.float32)``, then ``weight *
  hidden_states.to(input_dtype)``): it keeps the fp32 input and, when its weight trains, the normalised
  tensor. ``layer_norm`` autocasts to fp32 and keeps its fp32 input.
* Autograd keeps an operand only for the gradients it must compute: a frozen linear layer keeps no
  input. PEFT's LoRA layer casts its input to the adapter's dtype (fp32, ``autocast_adapter_dtype``)
  before ``lora_A``, so each adapted projection keeps its own bf16 copy of its input.

SDPA's flash and memory-efficient kernels keep q, k, v, the output and a log-sum-exp, never the
``s x s`` scores (Dao et al. 2022, arXiv 2205.14135). A gated MLP keeps the gate output (for SiLU), the
SiLU output and the up output (for the product) and the product (for the down projection).

Checked against tests/test_calibration.py: Qwen3 0.6B/1.7B full fine-tuning and 8B LoRA on an H200
(data/calibration/h200-2026-11-26.json), within 2% without checkpointing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from engine.sizing._checks import check_positive, check_positive_int
from engine.sizing.shape import TransformerShape

__all__ = [
    "ADAPTED_ALL",
    "KeptActivations",
    "TrainedPart",
    "kept_activations",
    "kept_bytes_per_token_layer",
    "loss_bytes_per_token",
]

ADAPTED_ALL = frozenset({"q", "k", "v", "o", "gate", "up", "down"})
"""Every linear projection of a block."""

STANDARD_LOSS_BYTES_PER_LOGIT = 2.0 + 4.0 + 4.0 + 4.0
"""A Hugging Face causal-LM loss at its peak, the start of the backward pass, per logit: the bf16 logits
the model returns (kept by its output), the fp32 log-softmax ``cross_entropy`` keeps for its backward,
that tensor's incoming gradient and the gradient it produces for the fp32 upcast (``ForCausalLMLoss``:
``logits = logits.float()``; PyTorch ``_log_softmax_backward_data(grad_output, output)``)."""

SOFTCAP_BYTES_PER_LOGIT = 2.0
"""What soft-capped logits add per logit (Hugging Face Gemma2ForCausalLM: ``logits / cap``, ``tanh``,
``x cap``): ``tanh`` keeps its bf16 output for its backward, a second copy of the logits' size beside the
capped logits the model returns. Gemma 2 2B LoRA at 2 x 4,096 tokens measured 40.1 GB on an H200
(data/calibration/h200-2026-11-27-d.json), 37.0 GB predicted without this term."""


@dataclass(frozen=True, slots=True)
class TrainedPart:
    """Which weights of a block train, and how the stack holds the activations around them."""

    adapters: frozenset[str] | None = None
    """None: every weight trains (full fine-tuning); else the projections carrying LoRA adapters"""
    residual_bytes: float = 4.0
    """bytes of the residual stream: 4 when fp32 weights run under autocast, 2 on a 16-bit base"""
    compute_bytes: float = 2.0
    """bytes of the matmul inputs autocast makes: 2 for bf16/fp16, 4 for fp32 training"""

    @property
    def full(self) -> bool:
        return self.adapters is None


def _norm(width: int, part: TrainedPart, rms: bool) -> float:
    """A norm over ``width`` values: its fp32 input, plus the normalised tensor when an RMSNorm's
    weight trains (kept for the weight's gradient at the residual's width)."""
    kept = 4.0 * width
    if rms and part.full:
        kept += max(part.compute_bytes, part.residual_bytes) * width
    return kept


def _projection_inputs(shape: TransformerShape, part: TrainedPart) -> tuple[float, float]:
    """Copies of the attention block's and the MLP's input kept by the projections reading them
    (per token, bytes)."""
    h, c = shape.hidden_size, part.compute_bytes
    mlp_in = ("gate", "up") if shape.mlp == "gated" else ("up",)
    if part.full:
        separate = part.residual_bytes > c  # autocast casts the fp32 norm output at each call
        attention = (3 if separate else 1) * c * h
        mlp = (len(mlp_in) if separate else 1) * c * h
        return attention, mlp
    adapted = set(part.adapters or ())
    return c * h * len(adapted & {"q", "k", "v"}), c * h * len(adapted & set(mlp_in))


def _attention(shape: TransformerShape, part: TrainedPart) -> float:
    """Inside attention: q, k, v and the output kept by SDPA, the output projection's input, and the
    q/k norms' tensors (Qwen3, Gemma 3)."""
    c = part.compute_bytes
    q = shape.q_dim
    kv = shape.q_dim if shape.is_mla else shape.kv_dim  # MLA decompresses keys to every head
    kept = c * (q + 2 * kv) + c * q  # SDPA: q, k, v; its output
    if part.full or "o" in (part.adapters or ()):
        kept += c * q  # the output projection's input (a contiguous copy of SDPA's output)
    if shape.qk_norm:
        kept += (4.0 + (c if part.full else 0.0)) * (q + kv)
    return kept


def _mlp(width: int, shape: TransformerShape, part: TrainedPart) -> float:
    """One MLP of ``width`` for one token: the gate output, the activation's output, the up output and
    the down projection's input (gated); the up output and the activation's output (dense)."""
    c = part.compute_bytes
    if shape.mlp == "dense":
        return 2 * c * width
    down_input = part.full or "down" in (part.adapters or ())
    return (3 + (1 if down_input else 0)) * c * width


def kept_bytes_per_token_layer(
    shape: TransformerShape,
    part: TrainedPart,
    *,
    moe_layer: bool = False,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
) -> float:
    """Bytes one transformer layer keeps per token for the backward pass (bytes).

    Formula (h hidden, q = heads x head_dim, kv = KV heads x head_dim, i the MLP width, c the compute
    bytes, r the residual bytes, n the norms a layer has): ``n x (4 + r) h`` (trained RMSNorm) or
    ``n x 4 h``, n = 2 for a pre-norm layer, 4 for Gemma's, which also normalises the attention's and the
    MLP's outputs before adding them to the residual stream (Gemma 2 report, arXiv 2408.00118, Sec. 2;
    each Gemma RMSNorm computes in fp32 as Hugging Face's does); the
    projections' input copies (``3 c h + 2 c h`` when autocast casts an fp32 input per call or PEFT per
    adapter, else ``c h`` each); attention ``c (q + 2 kv) + 2 c q`` plus ``(4 + c)(q + kv)`` for q/k norms;
    a gated MLP ``4 c i``. Qwen3-0.6B fully fine-tuned: ``26 h + 12 q + 10 kv + 8 i`` = 86,016 B.
    An MoE layer keeps its MLP once per routed expert a token visits and per shared expert, plus the
    gathered input and the weighted output per routed expert and the fp32 router logits.
    Tensor parallelism splits what lies between the column- and row-parallel layers (attention and MLP)
    and replicates the norms and their outputs (Korthikanti et al. 2022, Sec. 4.2.1); with sequence
    parallelism, which Megatron-LM and torchtitan run beside it, each rank keeps its share of the
    sequence in the norms and the residual stream too, and the whole layer is split (Sec. 4.2.2:
    ``34 s b h / t``).
    """
    t = check_positive_int("tensor_parallel", tensor_parallel)
    rms = shape.norm == "rmsnorm"
    norms = shape.norms_per_layer * _norm(shape.hidden_size, part, rms)
    attention_in, mlp_in = _projection_inputs(shape, part)
    if moe_layer:
        routed = shape.experts_per_token
        per_expert = (
            _mlp(shape.expert_size, shape, part) + mlp_in + 2 * part.compute_bytes * shape.hidden_size
        )
        mlp = routed * per_expert + shape.n_shared_experts * (_mlp(shape.expert_size, shape, part) + mlp_in)
        mlp += 4.0 * shape.n_experts
        replicated = norms + attention_in
    else:
        mlp = _mlp(shape.intermediate_size, shape, part)
        replicated = norms + attention_in + mlp_in  # each rank keeps its copy of the whole input
    split = _attention(shape, part) + mlp
    return (replicated + split) / t if sequence_parallel else replicated + split / t


def loss_bytes_per_token(
    vocab_size: int, *, fused: bool = False, tensor_parallel: int = 1, softcapped: bool = False
) -> float:
    """The logits and the loss's tensors at their peak, per token (bytes).

    Formula: ``14 V`` for a Hugging Face causal-LM loss (:data:`STANDARD_LOSS_BYTES_PER_LOGIT`): at
    Qwen3's 151,936-token vocabulary that is 2.1 MB per token, 35 GB for a batch of 8 x 2,048. ``16 V``
    where the logits are soft-capped (Gemma 2, ``cap x tanh(logits / cap)``): ``tanh`` keeps its 16-bit
    output for the backward pass beside the capped logits the model returns
    (:data:`SOFTCAP_BYTES_PER_LOGIT`). A fused linear-cross-entropy (Liger Kernel, Hsu et al. 2024, arXiv
    2410.10989, Sec. 3.2) computes the loss chunk by chunk and never materialises the logits: 0 here.
    Megatron's vocabulary-parallel loss splits the logits over the tensor-parallel GPUs.
    """
    v = check_positive_int("vocab_size", vocab_size)
    if fused:
        return 0.0
    per_logit = STANDARD_LOSS_BYTES_PER_LOGIT + (SOFTCAP_BYTES_PER_LOGIT if softcapped else 0.0)
    return per_logit * v / check_positive_int("tensor_parallel", tensor_parallel)


@dataclass(frozen=True, slots=True)
class KeptActivations:
    """What a training step keeps beside the model states at its peak, per GPU (bytes)."""

    layers: float
    """the transformer layers' kept tensors (with checkpointing: each layer's input plus one layer)"""
    head: float
    """the final norm and the LM head's input"""
    loss: float
    """the logits and the loss's tensors (:func:`loss_bytes_per_token`)"""

    @property
    def total(self) -> float:
        return self.layers + self.head + self.loss


def kept_activations(
    shape: TransformerShape,
    tokens: int,
    part: TrainedPart,
    *,
    checkpointing: bool = False,
    fused_loss: bool = False,
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
) -> KeptActivations:
    """A training step's activations and logits for ``tokens`` tokens (micro-batch x sequence) (bytes).

    Formula: ``tokens x`` (sum over layers of :func:`kept_bytes_per_token_layer`) without
    checkpointing; with full checkpointing per layer (Hugging Face ``gradient_checkpointing_enable``,
    Chen et al. 2016, arXiv 1604.06174) each layer keeps only its input, ``r h`` per token, and the layer
    being recomputed holds its own tensors again. Plus the head (final norm, and the LM head's input
    when the head trains) and :func:`loss_bytes_per_token`.
    Calibrated (tests/test_calibration.py) on an H200: Qwen3-1.7B batch 4 x 2,048 predicted 73.2 GB
    against 72.3 GB measured; Qwen3-8B LoRA r16 batch 4: 99.7 against 99.8 GB.
    """
    n = check_positive_int("tokens", tokens)
    check_positive("residual_bytes", part.residual_bytes)
    layers, head, loss = _per_token(
        shape, part, checkpointing, fused_loss, tensor_parallel, sequence_parallel
    )
    return KeptActivations(layers=n * layers, head=n * head, loss=n * loss)


@lru_cache(maxsize=1024)  # 10-20 per workload; the garbage collector walks every entry
def _per_token(
    shape: TransformerShape,
    part: TrainedPart,
    checkpointing: bool,
    fused_loss: bool,
    tensor_parallel: int,
    sequence_parallel: bool,
) -> tuple[float, float, float]:
    """Per token: the layers', the head's and the loss's bytes (pure, so computed once per layout:
    a search sizes hundreds of plans of a few layouts). Sequence parallelism splits what tensor
    parallelism alone replicates: the layers' inputs kept by checkpointing and the head's norm."""
    t, sp = tensor_parallel, sequence_parallel
    dense = kept_bytes_per_token_layer(shape, part, tensor_parallel=t, sequence_parallel=sp)
    moe = (
        kept_bytes_per_token_layer(shape, part, moe_layer=True, tensor_parallel=t, sequence_parallel=sp)
        if shape.is_moe
        else 0.0
    )
    per_token = shape.n_dense_layers * dense + shape.n_moe_layers * moe
    sequence_ways = t if sp else 1  # what tensor parallelism alone keeps whole, sequence parallelism splits
    if checkpointing:
        layer_inputs = shape.n_layers * part.residual_bytes * shape.hidden_size / sequence_ways
        per_token = layer_inputs + max(dense, moe)
    rms = shape.norm == "rmsnorm"
    head = (
        _norm(shape.hidden_size, part, rms) + (part.compute_bytes * shape.hidden_size if part.full else 0.0)
    ) / sequence_ways
    loss = loss_bytes_per_token(
        shape.vocab_size,
        fused=fused_loss,
        tensor_parallel=t,
        softcapped=shape.final_logit_softcapping is not None,
    )
    return per_token, head, loss

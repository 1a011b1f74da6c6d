"""The fixed-size state of a recurrent layer (linear attention) per sequence: what a hybrid model's
Gated DeltaNet layers hold in place of a KV cache, whatever the context's length."""

from __future__ import annotations

from engine.sizing._checks import check_positive_int

__all__ = ["DEFAULT_CONV_KERNEL", "gated_delta_net_params", "gated_delta_net_state_bytes"]

DEFAULT_CONV_KERNEL = 4
"""The short convolution's length when a config leaves `linear_conv_kernel_dim` out: Qwen3-Next's and
Qwen3.5's (and the KB schema's default)."""


def gated_delta_net_state_bytes(
    key_heads: int,
    value_heads: int,
    key_head_dim: int,
    value_head_dim: int,
    *,
    conv_kernel: int = DEFAULT_CONV_KERNEL,
    state_bytes: int = 2,
) -> int:
    """One Gated DeltaNet layer's state per sequence (bytes), as vLLM keeps it (vllm/model_executor/
    layers/mamba/mamba_utils.py, `MambaStateShapeCalculator.gated_delta_net_state_shape`):
    the recurrence's matrix, ``value_heads x value_head_dim x key_head_dim`` values in ``state_bytes``
    (Yang et al. 2024, Gated Delta Networks, arXiv 2412.06464), and the short convolution's last
    ``conv_kernel - 1`` inputs of its q, k and v channels, ``2 x key_heads x key_head_dim + value_heads x
    value_head_dim``, in 16 bits. Qwen3.5's default (16 key and 32 value heads of 128, kernel 4), bf16:
    524,288 + 24,576 values, 1,097,728 bytes."""
    values = check_positive_int("value_heads", value_heads) * check_positive_int(
        "value_head_dim", value_head_dim
    )
    channels = (
        2 * check_positive_int("key_heads", key_heads) * check_positive_int("key_head_dim", key_head_dim)
    )
    window = check_positive_int("conv_kernel", conv_kernel) - 1
    return (
        values * key_head_dim * check_positive_int("state_bytes", state_bytes)
        + (channels + values) * window * 2
    )


def gated_delta_net_params(
    hidden_size: int,
    key_heads: int,
    value_heads: int,
    key_head_dim: int,
    value_head_dim: int,
    *,
    conv_kernel: int = DEFAULT_CONV_KERNEL,
) -> int:
    """Parameters of one Gated DeltaNet token mixer (count), as Hugging Face transformers builds it
    (`Qwen3NextGatedDeltaNet`; Qwen3.5 splits the same projections in four): with ``k = key_heads x
    key_head_dim`` and ``v = value_heads x value_head_dim``, the input projection to queries, keys, values
    and the output gate ``h x (2k + 2v)`` and to the per-head decay and step ``h x 2 x value_heads``, the
    depthwise convolution over q, k and v ``(2k + v) x conv_kernel`` (no bias), ``A_log`` and ``dt_bias``
    (one per value head), the gated RMSNorm over ``value_head_dim`` and the output projection ``v x h``.
    Qwen3.5-27B (h 5,120, 16 key heads and 48 value heads of 128): 115,876,064, where a plain attention
    layer of its 24 query and 4 KV heads of 256 would hold 73,400,320."""
    h = check_positive_int("hidden_size", hidden_size)
    heads = check_positive_int("value_heads", value_heads)
    v = heads * check_positive_int("value_head_dim", value_head_dim)
    k = check_positive_int("key_heads", key_heads) * check_positive_int("key_head_dim", key_head_dim)
    projections = h * (2 * k + 2 * v) + h * 2 * heads + v * h
    convolution = (2 * k + v) * check_positive_int("conv_kernel", conv_kernel)
    return projections + convolution + 2 * heads + value_head_dim

"""The parameters of a vision-language model's image encoder, from its `vision_config`: held in memory
beside the language model's weights, run once per image or video frame rather than per token."""

from __future__ import annotations

from engine.sizing._checks import check_non_negative_int, check_positive_int

__all__ = ["qwen_vl_vision_params"]


def qwen_vl_vision_params(
    *,
    depth: int,
    hidden_size: int,
    intermediate_size: int,
    out_hidden_size: int,
    in_channels: int = 3,
    patch_size: int = 16,
    temporal_patch_size: int = 2,
    spatial_merge_size: int = 2,
    num_position_embeddings: int = 0,
    deepstack_mergers: int = 0,
) -> int:
    """Qwen3-VL's and Qwen3.5's vision tower (count), as transformers builds it (`Qwen3VLVisionModel`):
    a Conv3d patch embedding ``in_channels x temporal x patch^2 x h + h``, a learned position table
    ``positions x h``, ``depth`` blocks of two LayerNorms, fused qkv and output projections and a
    two-matrix GELU MLP, all with biases (``4h + (3h^2 + 3h) + (h^2 + h) + 2hi + i + h``), and the
    merger that maps each ``merge^2`` patches to the language model's width: a LayerNorm over ``h``,
    ``m x m + m`` and ``m x out + out`` with ``m = h x merge^2``; each DeepStack merger (Qwen3-VL) the
    same with its LayerNorm over ``m``. Qwen3.5-35B-A3B (depth 27, h 1,152, i 4,304, out 2,048, 2,304
    positions): 446,571,248, as summed from its weight shapes (kb/models/qwen3-5-35b-a3b.yaml)."""
    h = check_positive_int("hidden_size", hidden_size)
    i = check_positive_int("intermediate_size", intermediate_size)
    out = check_positive_int("out_hidden_size", out_hidden_size)
    patch = check_positive_int("patch_size", patch_size)
    patches = check_positive_int("in_channels", in_channels) * check_positive_int(
        "temporal_patch_size", temporal_patch_size
    )
    embedding = patches * patch * patch * h + h
    positions = check_non_negative_int("num_position_embeddings", num_position_embeddings) * h
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * i + i) + (i * h + h)
    m = h * check_positive_int("spatial_merge_size", spatial_merge_size) ** 2
    projection = (m * m + m) + (m * out + out)
    merger = 2 * h + projection
    deepstack = check_non_negative_int("deepstack_mergers", deepstack_mergers) * (2 * m + projection)
    return embedding + positions + check_positive_int("depth", depth) * block + merger + deepstack

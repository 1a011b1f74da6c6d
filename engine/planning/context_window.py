"""A model's context window, and the request's sequences held to it.

A model attends over the positions it was trained for: its KB entry's `context_length` (Llama 3.1:
131,072), else the `max_position_embeddings` of a pasted config. Beyond it:

- an encoder or embedding model serving cannot read the input whole. Embedding servers truncate it or refuse
  it (Text Embeddings Inference answers a longer input with a validation error unless asked to
  truncate), so a longer document is embedded as chunks, each a sequence of its own. The sizing reads
  it so: `chunks` sequences of about `ceil(tokens / chunks)` tokens, which keeps the tokens to read and
  costs the attention of the chunks, not of one sequence the model cannot hold.
- a decoder is sized as asked, and a rule warns (rules/workload/context-beyond-the-models-window.yaml):
  vLLM refuses a `max_model_len` beyond the model's positions unless its RoPE scaling is extended, and
  a training run at that length is context extension.

The request's default `seq_len` (2,048) is a decoder's; on a model whose window is shorter (BERT's 512,
GPT-2's 1,024) the window is the default, so a request that never named a length is not sized, or
warned, for one the model cannot take.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import Any

from engine.models.kb import Model
from engine.models.request import Workload
from engine.planning.hf_config import FromHfConfig


@dataclass(frozen=True)
class Window:
    """The model's window and the request's sequences held to it."""

    tokens: int | None
    """the positions the model was trained for (None when neither the KB nor a config says)"""
    seq_len: int
    """the request's `seq_len`, or the window where the request left the default and it is longer"""
    default_shortened: bool
    """the request left `seq_len` at its default, longer than the window, and the window replaced it"""
    chunks: int
    """an encoder's input longer than the window, read as this many chunks (1: whole)"""

    def job_fields(self) -> dict[str, Any]:
        """The Job's fields this window sets."""
        return {
            "seq_len": self.seq_len,
            "context_window": self.tokens,
            "chunks_per_input": self.chunks,
            "seq_len_shortened": self.default_shortened,
        }


def window_of(model: Model | None, read: FromHfConfig | None) -> int | None:
    """The model's window: a pasted config's, which describes the model sized, else the KB entry's."""
    if read is not None and read.context_length is not None:
        return read.context_length
    return model.context_length if model is not None else None


def fitted(workload: Workload, input_tokens: int | None, window: int | None, *, reads_only: bool) -> Window:
    """The request's sequence length and an encoder's chunks, for a model of `window` positions;
    `input_tokens`: an encoder's input as the serving block states it (None: `seq_len` is the input)."""
    seq_len = workload.seq_len
    shortened = window is not None and "seq_len" not in workload.model_fields_set and seq_len > window
    if shortened and window is not None:
        seq_len = window
    asked = seq_len if input_tokens is None else max(1, input_tokens)
    chunks = ceil(asked / window) if reads_only and window is not None and asked > window else 1
    return Window(window, seq_len, shortened, chunks)

"""A model's context window (engine/planning/context_window.py): the request's default sequence length
held to it, an encoder's longer input read in chunks, a decoder's longer context sized as asked and
warned about. Windows from kb/models (context_length) and from a pasted config.json."""

from __future__ import annotations

from typing import Any

import pytest

from engine.models.request import RecommendRequest, Workload
from engine.models.response import RecommendResponse
from engine.planning.context_window import fitted
from engine.recommend import Advisor
from tests.test_fp16_overflow import GEMMA_3_1B_CONFIG

BEYOND = "context-beyond-the-models-window"
CHUNKS = "long-inputs-are-read-in-chunks"


def ask(advisor: Advisor, workload: dict[str, Any], **constraints: Any) -> RecommendResponse:
    body = {
        "workload": {"task": "inference", **workload},
        "constraints": {"acquisition": "rent", **constraints},
        "top_k": 3,
    }
    return advisor.recommend(RecommendRequest.model_validate(body))


def workload(**fields: Any) -> Workload:
    return Workload(task="inference", params_b=1, **fields)


def rules_of(answer: RecommendResponse) -> set[str]:
    return {step.rule for step in answer.trace}


def test_the_default_length_is_the_window_where_the_window_is_shorter() -> None:
    """bge-small-en-v1.5 has 512 positions (kb/models): the default 2,048 would size inputs it cannot
    read. A stated length is the request's own; a window longer than the default changes nothing."""
    assert fitted(workload(), None, 512, reads_only=True).seq_len == 512
    assert fitted(workload(), None, 512, reads_only=True).default_shortened
    assert fitted(workload(), None, 131_072, reads_only=False).seq_len == 2048
    assert fitted(workload(), None, None, reads_only=False).seq_len == 2048
    stated = fitted(workload(seq_len=500_000), None, 131_072, reads_only=False)
    assert (stated.seq_len, stated.chunks, stated.default_shortened) == (500_000, 1, False)


def test_an_encoders_longer_input_is_read_in_equal_chunks() -> None:
    """2,000 tokens on 512 positions: ceil(2000 / 512) = 4 chunks (of 500 each, Job.context_tokens); the
    serving block's input length counts over seq_len; a decoder's input is never chunked."""
    assert fitted(workload(seq_len=2000), None, 512, reads_only=True).chunks == 4
    assert fitted(workload(), 513, 512, reads_only=True).chunks == 2
    assert fitted(workload(), 512, 512, reads_only=True).chunks == 1
    assert fitted(workload(seq_len=2000), None, 512, reads_only=False).chunks == 1


def test_an_encoder_left_at_the_default_is_sized_at_its_window(advisor: Advisor) -> None:
    """The same answer as a request stating the 512 tokens, and the assumption says where 512 came from."""
    default = ask(advisor, {"model": "bge-small-en-v1-5"})
    stated = ask(advisor, {"model": "bge-small-en-v1-5", "seq_len": 512})
    assert default.assumptions["seq_len"] == 512 and default.assumptions["context_tokens"] == 512
    assert "context window of 512 tokens" in str(default.assumptions["seq_len_source"])
    assert "seq_len" not in stated.assumptions
    assert [r.throughput.tokens_per_s for r in default.recommendations] == [
        r.throughput.tokens_per_s for r in stated.recommendations
    ]
    assert not {BEYOND, CHUNKS} & rules_of(default)


def test_an_encoders_traffic_keeps_its_tokens_when_read_in_chunks(advisor: Advisor) -> None:
    """600 requests/min of 2,000 tokens on bge-large-en-v1.5 (512 positions): 4 chunks of 500 a request,
    the demand still 600 / 60 x 2,000 x 1.2 burst headroom = 24,000 tokens/s, and the chunks said."""
    serving = {"requests_per_min": 600, "avg_input_tokens": 2000}
    answer = ask(advisor, {"model": "bge-large-en-v1-5", "serving": serving})
    assert answer.assumptions["context_tokens"] == 500
    assert answer.requirements.required_tokens_per_s == pytest.approx(24_000)
    assert CHUNKS in rules_of(answer) and BEYOND not in rules_of(answer)
    assert any("read as 4 chunks of about 500 tokens" in w for w in answer.warnings)


def test_a_corpus_is_embedded_chunk_by_chunk(advisor: Advisor) -> None:
    """1,000,000 documents of 2,000 tokens: every token read, 4 chunks a document, so the run takes the
    corpus's 2e9 tokens over the plan's rate, not 512 of each document's."""
    serving = {"corpus_documents": 1_000_000, "avg_input_tokens": 2000}
    best = ask(advisor, {"model": "bge-large-en-v1-5", "serving": serving}).recommendations[0]
    rate = best.throughput.aggregate_tokens_per_s
    assert best.throughput.corpus_hours == pytest.approx(2e9 / rate / 3600, rel=0.01)


def test_a_decoders_context_past_its_window_is_sized_as_asked_and_warned(advisor: Advisor) -> None:
    """Llama 3.1 8B has 131,072 positions: 500,000 tokens are held in the KV cache as asked, and the
    answer says the model, not the hardware, is the question (vLLM refuses such a max_model_len)."""
    answer = ask(advisor, {"model": "llama-3-1-8b", "seq_len": 500_000})
    assert answer.assumptions["context_tokens"] == 500_000
    assert answer.assumptions["context_window"] == 131_072
    assert BEYOND in rules_of(answer)
    assert any(
        "500,000 tokens a sequence are beyond the model's context window of 131,072" in w
        for w in answer.warnings
    )
    within = ask(advisor, {"model": "llama-3-1-8b", "seq_len": 131_072})
    assert not {BEYOND, CHUNKS} & rules_of(within)


def test_a_pasted_configs_positions_are_its_window(advisor: Advisor) -> None:
    """Gemma 3 1B given by its config.json (max_position_embeddings 32,768), asked for 65,536 tokens."""
    answer = ask(advisor, {"hf_config": GEMMA_3_1B_CONFIG, "seq_len": 65_536})
    assert answer.assumptions["context_window"] == 32_768
    assert BEYOND in rules_of(answer)


def test_a_training_run_past_the_window_is_context_extension(advisor: Advisor) -> None:
    """Fine-tuning Llama 2 7B (4,096 positions) at 16,384 tokens is sized at 16,384 and warned."""
    answer = ask(advisor, {"model": "llama-2-7b", "task": "lora", "seq_len": 16_384})
    assert BEYOND in rules_of(answer)
    assert any("training at this length is context extension" in w for w in answer.warnings)

"""A large rental on demand for a year or more names the provider's committed terms and where they pay
(engine/answer/commitment.py): a commitment is paid for every hour of its term, so it saves only where
its discount exceeds the idle share of the term. The terms are the KB's (kb/providers/aws.yaml: AWS
Savings Plans, up to 72% off; gcp.yaml: committed use discounts, up to 57%)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.recommend import Advisor


def answer(advisor: Advisor, workload: dict[str, Any], **constraints: Any) -> RecommendResponse:
    return advisor.recommend(
        RecommendRequest.model_validate({"workload": workload, "constraints": constraints})
    )


def commitment_words(response: RecommendResponse) -> list[str]:
    return [w for w in response.warnings if "commitment" in w]


FLEET = {
    "task": "inference",
    "model": "llama-3-8b",
    "serving": {"requests_per_min": 300_000, "avg_input_tokens": 3000, "avg_output_tokens": 256},
}
"""Llama 3 8B at 5,000 requests/s of 3,000 tokens (meta-llama/llama3 issue 243), rented on AWS: the
review's fleet that should name reserved capacity (docs/judgement.md, #27)"""


def test_a_fleet_rented_on_demand_names_the_providers_commitments_and_a_points_worth(
    advisor: Advisor,
) -> None:
    response = answer(advisor, FLEET, acquisition="rent", providers=["aws"])
    (words,) = commitment_words(response)
    first = response.recommendations[0]
    assert f"#1 rents {first.gpu_count} GPUs on demand for 36 months" in words
    assert "Savings Plans" in words and "up to 72% off on-demand" in words and "12 or 36-month" in words
    # a service uses every hour: one point of discount is a hundredth of the horizon's cost
    assert f"each point of discount saves ${first.cost.horizon_cost_usd / 100:,.0f}" in words


def test_at_partial_use_a_commitment_pays_only_above_the_idle_share(advisor: Advisor) -> None:
    """50% use: on demand pays half the hours, a commitment all of them at (1 - d): it saves above 50% off."""
    response = answer(
        advisor, FLEET, acquisition="rent", providers=["gcp"], horizon_months=24, utilization_pct=50
    )
    (words,) = commitment_words(response)
    assert "committed use discounts" in words and "up to 57% off" in words
    assert "sells 12-month commitments" in words  # a 36-month term would outlast the 24 months asked
    assert "for 24 months" in words and "at the 50% use costed here it saves only above 50% off" in words
    horizon_cost = response.recommendations[0].cost.horizon_cost_usd
    assert f"each point beyond saving ${horizon_cost / 0.5 / 100:,.0f}" in words


@pytest.mark.parametrize(
    ("workload", "constraints", "why"),
    [
        (FLEET, {"acquisition": "rent", "providers": ["aws"], "horizon_months": 6}, "shorter than a term"),
        (FLEET, {"acquisition": "rent", "providers": ["lambda"]}, "no published terms"),
        (
            {"task": "inference", "model": "llama-3-8b"},
            {"acquisition": "rent", "providers": ["aws"]},
            "one GPU",
        ),
        (
            {"task": "pretrain", "params_b": 1, "training_tokens_b": 20},
            {"acquisition": "rent", "providers": ["aws"], "gpu_count": 8},
            "one run, costed for its hours",
        ),
    ],
)
def test_no_commitment_is_named_where_it_is_not_the_question(
    advisor: Advisor, workload: dict[str, Any], constraints: dict[str, Any], why: str
) -> None:
    response = answer(advisor, workload, **constraints)
    assert response.recommendations, why
    assert commitment_words(response) == [], why

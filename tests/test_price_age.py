"""Every answer dates the prices it used (per recommendation and the oldest), warns when one is older
than constraints.max_price_age_days (default 90), and shows a bought option's capex range."""

from __future__ import annotations

from datetime import date

import pytest

from engine.models.request import RecommendRequest
from engine.recommend import Advisor


def _request(**constraints: object) -> RecommendRequest:
    return RecommendRequest.model_validate(
        {"workload": {"task": "inference", "model": "qwen2-5-7b"}, "constraints": constraints, "top_k": 5}
    )


@pytest.fixture
def pinned(advisor: Advisor) -> Advisor:
    """The embedded KB's advisor with today fixed (a copy: the shared one keeps its clock)."""
    return advisor.on_day(lambda: date(2026, 11, 26))


def test_each_recommendation_dates_its_prices(pinned: Advisor) -> None:
    answer = pinned.recommend(_request())
    dates = [r.price_as_of for r in answer.recommendations]
    assert all(d is not None for d in dates)
    assert answer.oldest_price_as_of == min(d for d in dates if d)
    for rec in answer.recommendations:
        if rec.acquisition == "rent":  # the offer's own date (kb/offers/<id>.yaml as_of)
            offer = next(
                o
                for o in pinned.kb.offers.values()
                if o.instance_type == rec.instance_type and o.provider == rec.provider
            )
            assert rec.price_as_of == offer.as_of.isoformat()


def test_prices_older_than_the_limit_are_named_in_a_warning(pinned: Advisor) -> None:
    answer = pinned.recommend(_request())
    warning = next(w for w in answer.warnings if w.startswith("Prices more than 90 days old"))
    for i, rec in enumerate(answer.recommendations, 1):
        assert rec.price_as_of is not None
        stale = (date(2026, 11, 26) - date.fromisoformat(rec.price_as_of)).days > 90
        assert (f"#{i}" in warning) == stale
        if stale:
            assert f"as of {rec.price_as_of}" in warning


def test_no_warning_within_the_limit(pinned: Advisor) -> None:
    answer = pinned.recommend(_request(max_price_age_days=36_500))
    assert not [w for w in answer.warnings if "days old" in w]


def test_the_age_is_counted_from_today(pinned: Advisor) -> None:
    """The same answer on the day its newest price was seen warns only about the older ones."""
    newest = max(
        date.fromisoformat(r.price_as_of or "") for r in pinned.recommend(_request()).recommendations
    )
    warning = " ".join(pinned.on_day(lambda: newest).recommend(_request()).warnings)
    assert f"as of {newest.isoformat()}" not in warning


def test_owned_hardware_has_no_price_date(pinned: Advisor) -> None:
    answer = pinned.recommend(
        _request(existing_hardware=[{"gpu": "nvidia-rtx-4090", "count": 1}], acquisition="any")
    )
    owned = [r for r in answer.recommendations if r.acquisition == "owned"]
    assert owned and all(r.price_as_of is None for r in owned)


def test_a_bought_option_shows_its_capex_range(pinned: Advisor) -> None:
    answer = pinned.recommend(_request(acquisition="buy"))
    assert answer.recommendations
    for rec in answer.recommendations:
        cost = rec.cost
        assert cost.capex_low_usd is not None and cost.capex_high_usd is not None
        assert cost.capex_low_usd <= cost.capex_usd <= cost.capex_high_usd
    rented = pinned.recommend(_request(acquisition="rent")).recommendations
    assert rented and all(r.cost.capex_low_usd is None for r in rented)


def test_max_price_age_days_is_validated() -> None:
    with pytest.raises(ValueError, match="max_price_age_days"):
        _request(max_price_age_days=0)


def test_the_shared_advisor_keeps_its_clock(advisor: Advisor) -> None:
    """The clock is given when an advisor is made; a fixed day is another advisor (`on_day`), so no
    test or request can change the day the shared one reads."""
    with pytest.raises(AttributeError):
        advisor.clock = lambda: date(2000, 1, 1)  # type: ignore[misc]
    fixed = advisor.on_day(lambda: date(2000, 1, 1))
    assert fixed.clock() == date(2000, 1, 1) and advisor.clock() != date(2000, 1, 1)
    assert fixed.kb is advisor.kb and fixed.engine is advisor.engine

"""``FillOrder.candidate_query``: the one search an order asks for."""

from __future__ import annotations

from agentlake.workforce import FillOrder


def test_the_candidate_query_is_the_orders_search_with_the_workers_left_out() -> None:
    order = FillOrder.parse(
        "3 x Welder in Cleveland, OH within 40 miles with OSHA 30", exclude_worker_ids=[7]
    )
    query = order.candidate_query(limit=50, leave_out=[9], min_availability=0.5)
    assert (query.role, query.city, query.state, query.radius_miles) == ("Welder", "Cleveland", "OH", 40.0)
    assert query.requirements == ["OSHA 30"]
    assert query.exclude_ids == [7, 9]
    assert (query.limit, query.min_availability) == (50, 0.5)


def test_narrowing_one_candidate_query_leaves_the_order_and_the_next_query_alone() -> None:
    order = FillOrder.parse("2 x Welder in Cleveland, OH with OSHA 30")
    first = order.candidate_query(limit=20)
    first.requirements.append("Forklift")
    first.exclude_ids.append(3)
    assert order.requirements == ["OSHA 30"]
    assert order.candidate_query(limit=20).requirements == ["OSHA 30"]
    assert order.candidate_query(limit=20).exclude_ids == []

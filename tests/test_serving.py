"""The server processes' collector policy: the start-up heap frozen, collections spaced out."""

from __future__ import annotations

import gc

from agentlake import serving


def test_tune_collector_freezes_the_start_up_heap_and_spaces_out_collections() -> None:
    before = gc.get_threshold()
    try:
        start_up_object = {"imported": ["at", "start-up"]}
        serving.tune_collector()
        assert gc.get_threshold() == (
            serving.YOUNG_THRESHOLD,
            serving.MIDDLE_THRESHOLD,
            serving.OLD_THRESHOLD,
        )
        assert gc.get_threshold()[0] > before[0]
        # What existed is in the permanent generation, which no collection walks.
        assert gc.get_freeze_count() > 0
        assert not any(o is start_up_object for o in gc.get_objects())
        later_object = ["made", "after"]  # a list is always tracked
        assert any(o is later_object for o in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

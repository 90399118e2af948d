"""A gang's tie-break draws made ahead in one call (placement/gang_select.py: ``TieDraws``) are the draws one
call per member makes: numpy's Generator gives the same numbers from ``integers(0, bounds)`` as from
``integers(bound)`` one bound at a time, and leaves the same state behind; and whatever rounds use of
the draws made ahead, settling leaves the generator where those rounds' own draws would have."""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.placement.gang_select import TieDraws


def _after(rng: np.random.Generator) -> tuple[list[int], list[float]]:
    """The generator's next draws of both kinds: equal only from equal states."""
    return rng.integers(0, 1 << 40, size=3).tolist(), rng.random(2).tolist()


@pytest.mark.parametrize("seed", range(12))
def test_one_call_over_bounds_equals_one_call_per_bound(seed: int) -> None:
    # Bounds from 2 up to 2**31 (the 32-bit path every tie-break takes), and a run of descending
    # bounds as a gang's rounds draw them (128, 127, ... 2).
    pick = np.random.default_rng(1000 + seed)
    bounds = pick.integers(2, 1 << 31, size=int(pick.integers(1, 60))).tolist()
    bounds += list(range(128, 1, -1)) + pick.integers(2, 40, size=30).tolist()
    one, many = np.random.default_rng(seed), np.random.default_rng(seed)
    singly = [int(one.integers(b)) for b in bounds]
    together = many.integers(0, bounds).tolist()
    assert together == singly
    assert all(0 <= v < b for v, b in zip(singly, bounds, strict=True))
    assert _after(many) == _after(one)


def _rounds(rng: np.random.Generator, tied_counts: list[int], rounds_left: list[int]) -> list[int]:
    draws = TieDraws(rng)
    out = [draws.draw(t, r) for t, r in zip(tied_counts, rounds_left, strict=True)]
    draws.settle()
    return out


@pytest.mark.parametrize(
    ("tied_counts", "rounds_left"),
    [
        ([9, 8, 7, 6], [4, 3, 2, 1]),  # as foreseen: every draw made ahead is used
        ([9, 8, 7], [6, 5, 4]),  # the gang stops early (no node for its 4th member): 3 draws taken back
        ([9, 9, 8, 7], [4, 3, 2, 1]),  # the node taken stayed among the best: drawn again from there
        ([9, 8, 3, 2], [4, 3, 2, 1]),  # a new set of best nodes after the 2nd round
        ([2, 5, 4], [3, 2, 1]),  # 2 tied: one draw alone, then ahead again
        ([40, 39, 38, 37, 36], [70, 69, 68, 67, 66]),  # more rounds than tied nodes
    ],
)
def test_draws_ahead_leave_the_generator_as_draws_one_at_a_time(
    tied_counts: list[int], rounds_left: list[int]
) -> None:
    for seed in range(5):
        ahead, singly = np.random.default_rng(seed), np.random.default_rng(seed)
        assert _rounds(ahead, tied_counts, rounds_left) == [int(singly.integers(t)) for t in tied_counts]
        assert _after(ahead) == _after(singly)


def test_settle_before_another_draw_from_the_generator() -> None:
    # Two rounds of a foreseen run of 5, then an ordinary select's own draw: settling first makes that
    # draw the one it would be after two draws one at a time.
    ahead, singly = np.random.default_rng(7), np.random.default_rng(7)
    draws = TieDraws(ahead)
    first = [draws.draw(6, 5), draws.draw(5, 4)]
    draws.settle()
    assert first == [int(singly.integers(6)), int(singly.integers(5))]
    assert int(ahead.integers(100)) == int(singly.integers(100))

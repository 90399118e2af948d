"""The ledger's vectorised dollars: the same float as Python's exact ``int / int`` for every row."""

from __future__ import annotations

import numpy as np

from fleetlab.cost.billing import MICRO, MS_PER_HOUR
from fleetlab.cost.ledger import exact_quotient


def test_exact_quotient_rounds_as_python_int_division_also_beyond_2_to_53() -> None:
    """55.04 $/h is 55,040,000 µ$/h; a node of 8 GPUs has 8 × 3,600,000 × 1,000,000 = 2.88e13 in the
    denominator. 3,600,000 unit-ms (one GPU-hour) is 55.04 / 8 = 6.88 $. Numerators past 2**53 (an 8-GPU
    node idle for weeks) go through Python ints; both paths must give Python's correctly rounded float."""
    den = 8 * MS_PER_HOUR * MICRO
    assert exact_quotient(np.asarray([55_040_000 * 3_600_000]), np.asarray([den]))[0] == 6.88
    rng = np.random.default_rng(7)
    price = rng.integers(1, 200_000_000, 5000)
    ms = rng.integers(0, 3_000_000_000, 5000)
    num = price * ms  # up to 6e17: many past 2**53 (9.0e15), none past int64
    dens = rng.integers(1, 193, 5000) * (MS_PER_HOUR * MICRO)
    assert (num >= 2**53).any() and (num < 2**53).any()
    got = exact_quotient(num, dens)
    want = [int(a) / int(b) for a, b in zip(num, dens, strict=True)]
    assert got.tolist() == want

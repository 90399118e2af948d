"""A valid MIG layout is accepted in any order: placement searches the starts NVIDIA's geometry allows
(src/fleetlab/data/mig_profiles.json, from `nvidia-smi mig -lgipp`) instead of taking the lowest free
start entry by entry."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import pool, scenario
from fleetlab.model.mig import MigLayoutError, place_layout, profiles


def test_a100_40gb_3g_2g_2g_fits_in_either_order() -> None:
    """A100-40GB: 3g.20gb starts {0,4}:4, 2g.10gb starts {0,2,4}:2. Listed 3g first, the old greedy put it
    at 0 and the 2g.10gb at 4; the second 2g.10gb then had no start left ("no room"). The search puts
    3g.20gb at 4 and the two 2g.10gb at 0 and 2: 2 + 2 + 4 = 8 memory slices, 3 + 2 + 2 = 7 compute."""
    forward = place_layout("A100-40GB", ["3g.20gb", "2g.10gb", "2g.10gb"])
    assert [(p.profile.name, p.start) for p in forward] == [("3g.20gb", 4), ("2g.10gb", 0), ("2g.10gb", 2)]
    reordered = place_layout("A100-40GB", ["2g.10gb", "2g.10gb", "3g.20gb"])
    assert sorted(p.start for p in reordered) == [0, 2, 4]


def test_the_pool_advertises_the_instances_of_a_reordered_layout() -> None:
    node_pool = pool("mig", gpus=1, gpu_model="A100-40GB", mig={"layout": ["3g.20gb", "2g.10gb", "2g.10gb"]})
    resources = scenario([node_pool], []).scenario.cluster.pools[0].device_resources()
    assert resources["nvidia.com/mig-3g.20gb"] == 1 and resources["nvidia.com/mig-2g.10gb"] == 2


MODELS = ["A100-40GB", "A100-80GB", "H100"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MODELS), st.lists(st.integers(0, 20), min_size=1, max_size=5))
def test_acceptance_does_not_depend_on_the_order(model: str, picks: list[int]) -> None:
    """Whatever the entries, every permutation is accepted or every one refused."""
    names = sorted(profiles(model))
    entries = [names[k % len(names)] for k in picks]

    def accepted(order: tuple[str, ...]) -> bool:
        try:
            place_layout(model, list(order))
        except MigLayoutError:
            return False
        return True

    verdicts = {accepted(order) for order in itertools.permutations(entries)}
    assert len(verdicts) == 1

"""A zone-bound gang's failed trial is written again, not rerun, while nothing it reads has changed: worked
by hand on two zones, then whole runs with and without the memo compared byte for byte."""

from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from fleetlab.experiment.output import write_run_files
from fleetlab.experiment.run import run_one
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.gang import GangPlacer, TopologyRequest
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import BoolArray
from fleetlab.sim import gang_retry
from fleetlab.sim.gang_retry import GangRetry
from fleetlab.sim.spec_table import GroupPlan
from test_placement import make, node, spec

ZONE = "topology.kubernetes.io/zone"


class World:
    """Nodes of 8 GPUs in zones a and b, one gang group pinned to zone a, offers counted."""

    def __init__(self, zones: list[str], gang: int, rooms: list[object] | None = None) -> None:
        self.s: Scheduler = make([node(f"n{i}", labels={ZONE: z}) for i, z in enumerate(zones)])
        self.state = self.s.state
        self.whole = self.s.compile(spec(cpu=8000, gpus=8))  # a whole node, any zone
        self.small = self.s.compile(spec(cpu=2000, gpus=2))
        self.pod: CompiledPod = self.s.compile(spec(cpu=8000, gpus=8, node_selector=((ZONE, "a"),)))
        self.placer = GangPlacer(self.s, [ZONE])
        self.gang = gang
        self.trials = 0
        self.plan: GroupPlan = (self.pod, self.s, self.placer, gang, TopologyRequest(), False)
        self.retry = GangRetry(self.state, [self.plan], self.place_gang, rooms or [])

    def place_gang(self, group: int, pod: int, allowed: BoolArray | None) -> bool:
        self.trials += 1
        plan, _ = self.placer.plan(self.pod, self.gang, TopologyRequest(), allowed, False)
        for n in plan or ():
            self.state.bind(n, self.pod.request, self.pod.nonzero)
        return plan is not None

    def fill(self, n: int) -> None:
        self.state.bind(n, self.whole.request, self.whole.nonzero)

    def free(self, n: int) -> None:
        self.state.release(n, self.whole.request, self.whole.nonzero)

    def offer(self) -> tuple[bool, int, int, int]:
        """Placed?, trials run so far, how far the release generation moved, log entries added."""
        generation, logged = self.state.release_generation, len(self.state.changes)
        placed = self.retry.place(0, 0)
        return (
            placed,
            self.trials,
            self.state.release_generation - generation,
            len(self.state.changes) - logged,
        )


def test_releases_in_the_other_zone_replay_the_failure_and_one_in_its_zone_retries() -> None:
    # n0, n1 in zone a; n2, n3 in zone b. A 2-pod gang of whole nodes pinned to a; n0 and n2 taken.
    w = World(["a", "a", "b", "b"], gang=2)
    w.fill(0)
    w.fill(2)
    # The trial binds one pod on n1 (the only whole free node of a), finds no node for the second and
    # rolls back: one release, so the generation moves by 1; the log gets n1's bind and release.
    assert w.offer() == (False, 1, 1, 2)
    # n2 (zone b) is released: the generation moves (the queue offers the gang again), but no node of a
    # changed: the failure is written again without a trial, the generation moving by 1 as the trial's
    # rollback would, the change log left alone.
    w.free(2)
    assert w.offer() == (False, 1, 1, 0)
    assert w.retry.replayed == 1
    # A bind and release on n3 (zone b) and a net-zero trial bind on n1 (zone a, the rows compared).
    w.fill(3)
    w.free(3)
    w.state.bind(1, w.pod.request, w.pod.nonzero)
    w.state.release(1, w.pod.request, w.pod.nonzero)
    assert w.offer() == (False, 1, 1, 0)
    assert w.retry.replayed == 2
    # n0 (zone a) is released: the rows differ, the gang is tried again: the trial binds n0 and n1 and
    # rolls them back (2 releases, 4 log entries), then the plan's 2 binds are made (2 more).
    w.free(0)
    assert w.offer() == (True, 2, 2, 6)
    assert w.state.requested[[0, 1], w.state.gpu_col].tolist() == [8, 8]


def test_a_gang_with_no_node_at_all_replays_a_failure_that_moves_nothing() -> None:
    w = World(["a", "b"], gang=2)
    w.fill(0)  # zone a full: no node fits one pod, the plan would stop at the fit count: no trial at all
    assert w.offer() == (False, 0, 0, 0)
    w.fill(1)
    w.free(1)
    assert w.offer() == (False, 0, 0, 0)
    assert w.retry.replayed == 1
    w.free(0)  # a release in zone a: n0 fits one pod of the 2, so a trial binds it and rolls it back
    assert w.offer() == (False, 1, 1, 2)
    assert w.retry.replayed == 1


def test_a_trial_that_drew_a_tie_break_is_run_again() -> None:
    # Zone a: n0 taken, n1 and n2 empty and alike: the gang of 3 ties n1 with n2 and draws.
    w = World(["a", "a", "a", "b"], gang=3)
    w.fill(0)
    draws = w.s.rng.bit_generator.state
    assert w.offer() == (False, 1, 2, 4)
    assert w.s.rng.bit_generator.state != draws
    w.fill(3)
    assert w.offer()[:2] == (False, 2)  # tried again, nothing remembered
    assert w.retry.replayed == 0


def test_images_topology_and_hooks_that_make_room_mean_a_real_trial() -> None:
    w = World(["a", "a", "b"], gang=2)
    w.fill(0)
    assert w.offer()[:2] == (False, 1)
    w.state.add_image(2, "trainer:v1", 1 << 30)  # ImageLocality reads every node's images
    assert w.offer()[:2] == (False, 2)
    w.state.add_image(2, "trainer:v1", 1 << 30)  # already there at that size: nothing moved
    assert w.offer()[:2] == (False, 2)
    w.state.set_unschedulable(2, True)  # a cordon changes the static filters' nodes
    assert w.offer()[:2] == (False, 3)
    hooked = World(["a", "a", "b"], gang=2, rooms=[object()])
    hooked.fill(0)
    for trials in (1, 2, 3):
        assert hooked.offer()[:2] == (False, trials)
    assert hooked.retry.replayed == 0


def test_pod_label_sets_and_claims_are_never_replayed() -> None:
    w = World(["a", "a", "b"], gang=2)
    labelled = w.s.compile(
        PodSpec(
            requests=w.pod.spec.requests,
            node_selector=w.pod.spec.node_selector,
            labels=(("app", "trainer"),),  # labels: placement depends on other pods
        )
    )
    w.pod = labelled
    w.retry = GangRetry(w.state, [(labelled, w.s, w.placer, 2, TopologyRequest(), False)], w.place_gang, [])
    w.fill(0)
    for trials in (1, 2):
        assert w.offer()[:2] == (False, trials)


class AlwaysTried(GangRetry):
    enabled = False


def test_random_worlds_match_the_path_that_tries_every_offer() -> None:
    """Random binds and releases of 2- and 8-GPU pods in both zones and images pulled, a gang of 2 or 3
    offered after each: with the memo and with every offer tried, each offer's answer, the release
    generation, every node's usage and the random stream stay the same."""
    replayed = 0
    for seed in range(40):
        rng = random.Random(seed)
        zones = [rng.choice("ab") for _ in range(6)]
        gang = rng.choice((2, 3))
        memo, tried = World(zones, gang), World(zones, gang)
        tried.retry = AlwaysTried(tried.state, [tried.plan], tried.place_gang, [])
        running: list[tuple[int, bool]] = []
        for _ in range(60):
            op, n, small = rng.random(), rng.randrange(len(zones)), rng.random() < 0.5
            image = f"img{rng.randrange(2)}"
            if op < 0.4 and int(memo.state.free[n, memo.state.gpu_col]) >= (2 if small else 8):
                running.append((n, small))
                for w in (memo, tried):
                    c = w.small if small else w.whole
                    w.state.bind(n, c.request, c.nonzero)
            elif op < 0.7 and running:
                at, was_small = running.pop(rng.randrange(len(running)))
                for w in (memo, tried):
                    c = w.small if was_small else w.whole
                    w.state.release(at, c.request, c.nonzero)
            elif op < 0.75:
                for w in (memo, tried):
                    w.state.add_image(n, image, 1 << 30)
            assert memo.offer()[0] == tried.offer()[0]
            a, b = memo.state, tried.state
            assert a.release_generation == b.release_generation
            assert a.requested.tolist() == b.requested.tolist()
            assert memo.s.rng.bit_generator.state == tried.s.rng.bit_generator.state
        replayed += memo.retry.replayed
    assert replayed > 0


def _outputs(name: str, jobs: int, gpus: int, seed: int, tmp: Path) -> tuple[str, int]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    from fleetlab.spec.loader import resolve
    from workloads import build

    scenario = build(name, jobs, gpus).model_copy(update={"seed": seed})
    real_init = GangRetry.__init__
    spies: list[GangRetry] = []

    def spying(self: GangRetry, *args: object) -> None:
        real_init(self, *args)  # type: ignore[arg-type]
        spies.append(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(GangRetry, "__init__", spying)
        run = run_one(resolve(scenario))
    write_run_files(run, tmp)
    digest = hashlib.sha256()
    for path in sorted(tmp.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(tmp)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest(), sum(s.replayed for s in spies)


@pytest.mark.parametrize(("name", "seed"), [("kueue", 3), ("kueue", 7), ("mix", 5)])
def test_runs_with_and_without_the_memo_write_the_same_bytes(
    name: str, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small saturated worlds of the benchmark workloads (gangs of 2 or 4 whole nodes, two zones, Kueue's
    zonal flavors), each run with the memo and with every offer tried: every output file the same."""
    remembered, replayed = _outputs(name, 900, 160, seed, tmp_path / "memo")
    monkeypatch.setattr(gang_retry.GangRetry, "enabled", False)
    tried, none = _outputs(name, 900, 160, seed, tmp_path / "tried")
    assert remembered == tried
    assert none == 0
    if name == "kueue":
        assert replayed > 0  # the memo answered offers: the comparison is not vacuous


def test_a_gang_free_to_use_every_node_is_always_tried() -> None:
    # Every node in zone a: nothing narrows the gang's nodes, any release can help it.
    w = World(["a", "a"], gang=2)
    w.fill(0)
    for trials in (1, 2, 3):
        assert w.offer() == (False, trials, 1, 2)
    assert w.retry.replayed == 0


@pytest.mark.parametrize(
    "nodes",
    [[], [3], [3, 9], [0, 1, 2, 3], [0, 2, 4, 6, 8], [1, 3, 5, 7], [0, 2, 3, 6], [0, 1, 4], [2, 5, 8, 11]],
)
def test_rows_at_reads_the_same_rows_as_the_node_numbers(nodes: list[int]) -> None:
    """A slice where the numbers step evenly, the numbers otherwise: the fingerprint's bytes are the same."""
    rows = np.arange(12 * 3, dtype=np.int64).reshape(12, 3)
    numbers = np.asarray(nodes, dtype=np.int64)
    at = gang_retry.rows_at(numbers)
    assert rows[at].tobytes() == rows[numbers].tobytes()
    evenly = len(nodes) > 0 and (len(nodes) < 3 or len(set(np.diff(nodes).tolist())) == 1)
    assert isinstance(at, slice) == evenly

"""Pod events of one time and kind pushed in a row share one heap entry (sim/events.py); the run is the
same as with one entry per event: the same pod stays, segments, timeline and job figures, for gangs whose
members' prep times are equal and unequal, with evictions, and for separate jobs at the same time."""

from __future__ import annotations

from typing import Any

import pytest

from builders import assert_same_pod_tables, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.sim import engine, loop
from fleetlab.sim.events import POD_FINISH, PREP_DONE, EventQueue


class _CountingQueue(EventQueue):
    """The engine's queue, counting the events that joined an entry pushed before them."""

    joined = 0

    def push(self, time_ms: int, kind: int, index: int, attempt: int = 0) -> None:
        entries = len(self.heap)
        super().push(time_ms, kind, index, attempt)
        _CountingQueue.joined += len(self.heap) == entries


def _run(resolved: Any, entries_shared: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(EventQueue, "coalesce", entries_shared)
    monkeypatch.setattr(engine, "EventQueue", _CountingQueue)
    monkeypatch.setattr(loop, "EventQueue", _CountingQueue)  # the loop's fast path tests the type
    _CountingQueue.joined = 0
    result = run_one(resolved, "default").result
    assert (_CountingQueue.joined > 0) is entries_shared
    return result


def test_gang_of_four_with_equal_prep_times(monkeypatch: pytest.MonkeyPatch) -> None:
    # Four 1-GPU nodes; a gang of 4 one-GPU pods with no image and no data is prepared the moment it is
    # bound (t = 0) and computes 100 s: one prep-done entry and one finish entry for the 4 pods; a second
    # gang submitted at 10 s waits for the first to finish (t = 100 s) and ends at 200 s.
    resolved = scenario(
        [pool(count=4, gpus=1)],
        [
            job("a", gpus=1, runtime=100, pods=4, gang=True),
            job("b", gpus=1, submit_s=10, runtime=100, pods=4, gang=True),
        ],
    )
    shared, own = _run(resolved, True, monkeypatch), _run(resolved, False, monkeypatch)
    assert_same_pod_tables(shared, own)
    assert shared.end_ms == 200_000
    assert shared.segments.ready_ms.tolist() == [0] * 4 + [100_000] * 4


def test_gang_of_four_with_unequal_prep_times(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two pools of two 1-GPU nodes and a spare node; the gang's data (100 MiB) comes at 50 MiB/s in the
    # first pool (members 0, 1: ready at 2 s) and 100 MiB/s in the second (members 2, 3: ready at 1 s;
    # pushed last, their entry is the open one), all computing from 2 s, ending at 2 + 100 = 102 s. A
    # one-pod job submitted at 1 s with no data is bound on the spare node right after the 1 s entry was
    # popped: its prep-done at 1 s is an entry of its own (it must not join the popped one, whose pods
    # pushed nothing since), so it computes from 1 s to 51 s.
    resolved = scenario(
        [
            pool("slow", count=2, gpus=1, data_bandwidth="50Mi"),
            pool("fast", count=2, gpus=1, data_bandwidth="100Mi"),
            pool("spare", count=1, gpus=1),
        ],
        [
            job("a", gpus=1, runtime=100, pods=4, gang=True, data_size="100Mi"),
            job("b", gpus=1, submit_s=1, runtime=50),
        ],
        scheduler={"tie_break": "first"},
    )
    shared, own = _run(resolved, True, monkeypatch), _run(resolved, False, monkeypatch)
    assert_same_pod_tables(shared, own)
    seg = shared.segments  # in release order: job b's pod (pod 4) first
    assert seg.pod.tolist() == [4, 0, 1, 2, 3]
    assert seg.ready_ms.tolist() == [1000, 2000, 2000, 1000, 1000]
    assert seg.start_ms.tolist() == [1000] + [2000] * 4
    assert seg.end_ms.tolist() == [51_000] + [102_000] * 4


def test_evicted_pods_in_shared_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    # Four one-pod jobs start together on four 1-GPU nodes (one finish entry at 100 s for the four) and
    # a gang of 4 waits behind them; gpu-2 fails at 50 s and is repaired at 80 s: the pod there (s2, the
    # entry's third) is evicted, so its event in the shared finish entry is stale and skipped while the
    # three others finish at 100 s. It runs again on gpu-2 from 80 s to 180 s; the gang runs 180-280 s.
    failures = {"trace": [{"node": "gpu-2", "at_s": 50, "repair_s": 30}]}
    resolved = scenario(
        [pool("gpu", count=4, gpus=1, failures=failures)],
        [
            *(job(f"s{i}", gpus=1, runtime=100) for i in range(4)),
            job("g", gpus=1, submit_s=1, runtime=100, pods=4, gang=True),
        ],
        scheduler={"tie_break": "first"},
    )
    shared, own = _run(resolved, True, monkeypatch), _run(resolved, False, monkeypatch)
    assert_same_pod_tables(shared, own)
    seg = shared.segments
    assert seg.evicted.sum() == 1
    assert sorted(seg.end_ms.tolist()) == [50_000] + [100_000] * 3 + [180_000] + [280_000] * 4


def test_queue_pops_every_event_in_push_order() -> None:
    # Pushed: prep 5 (pods 1, 2, 3 in a row: one entry), finish 5 (pod 4), prep 5 (pod 5: a new entry,
    # after the finish), prep 7 (pod 6). Popped one at a time: by time, then push order.
    q = EventQueue()
    for kind, t, pod in ((PREP_DONE, 5, 1), (PREP_DONE, 5, 2), (PREP_DONE, 5, 3), (POD_FINISH, 5, 4)):
        q.push(t, kind, pod, pod * 10)
    q.push(5, PREP_DONE, 5, 50)
    q.push(7, PREP_DONE, 6, 60)
    assert len(q.heap) == 4 and len(q) == 6
    popped = [q.pop() for _ in range(6)]
    assert [(t, k, p) for t, k, p, _ in popped] == [
        (5, PREP_DONE, 1),
        (5, PREP_DONE, 2),
        (5, PREP_DONE, 3),
        (5, POD_FINISH, 4),
        (5, PREP_DONE, 5),
        (7, PREP_DONE, 6),
    ]
    assert [a for *_, a in popped] == [10, 20, 30, 40, 50, 60]
    assert len(q) == 0


def test_a_popped_entry_takes_no_more_events() -> None:
    # Pod 1's prep at 5 is popped; pod 2's prep at 5 pushed afterwards is an entry of its own.
    q = EventQueue()
    q.push(5, PREP_DONE, 1, 0)
    assert q.pop() == (5, PREP_DONE, 1, 0)
    q.push(5, PREP_DONE, 2, 0)
    assert q.pop() == (5, PREP_DONE, 2, 0)
    assert len(q) == 0

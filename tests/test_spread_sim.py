"""Spread and anti-affinity through the simulator: replicas keep apart, zones stay balanced, service pods get
kube-scheduler's system default spreading, and bad constraints are named on load."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.spec.loader import load
from test_spec_errors import job0, minimal, spec_error, write

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def nodes_of(result, job_id: str) -> list[int]:  # type: ignore[no-untyped-def]
    j = result.jobs.ids.index(job_id)
    return [int(result.pods.node[p]) for p, pj in enumerate(result.pods.job) if int(pj) == j]


def test_required_hostname_anti_affinity_one_replica_per_node() -> None:
    """Four replicas on three nodes under a packing profile: three land on distinct nodes, the fourth waits
    with kube-scheduler's anti-affinity message."""
    resolved = scenario(
        [pool(count=3)],
        [job("web", gpus=1, runtime=10_000, pods=4, anti_affinity=[{"topology_key": HOST}])],
        horizon_s=100,
    )
    result = run_one(resolved, "most-allocated").result
    placed = [n for n in nodes_of(result, "web") if n >= 0]
    assert sorted(placed) == [0, 1, 2]
    (pending,) = result.pending
    assert pending.message == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    assert pending.blocked_by == "constraints"


def test_zone_spread_do_not_schedule_balances_zones() -> None:
    """maxSkew 1 over three zones: six pods packed by MostAllocated still end up two per zone."""
    constraint = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    resolved = scenario(
        [pool(count=6, zones=["za", "zb", "zc"])],
        [job("train", gpus=1, runtime=1000, pods=6, topology_spread=[constraint])],
    )
    result = run_one(resolved, "most-allocated").result
    zones = Counter(int(n) % 3 for n in nodes_of(result, "train"))
    assert sorted(zones.values()) == [2, 2, 2]
    assert not result.pending


def test_service_pods_get_system_default_spreading() -> None:
    """Defaulting System: replicas a service selects spread over hosts although MostAllocated packs;
    the same replicas without a service share one node."""

    def run(**extra):  # type: ignore[no-untyped-def]
        resolved = scenario([pool(count=3)], [job("web", gpus=1, runtime=1000, pods=3, **extra)])
        return nodes_of(run_one(resolved, "most-allocated").result, "web")

    assert len(set(run(service="web"))) == 3
    assert len(set(run())) == 1


def test_same_seed_gives_the_same_placement() -> None:
    """Determinism with spread constraints and random tie breaks."""
    constraint = {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"}
    resolved = scenario(
        [pool(count=8, zones=["za", "zb"])],
        [
            job(f"j{i}", gpus=1, runtime=500, pods=3, submit_s=i, topology_spread=[constraint])
            for i in range(6)
        ],
    )
    first = nodes_of(run_one(resolved, "default").result, "j5")
    assert first == nodes_of(run_one(resolved, "default").result, "j5")


def test_bad_max_skew_is_named(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["topology_spread"] = [{"maxSkew": 0, "topologyKey": ZONE}]
    message = str(spec_error(write(tmp_path, data)))
    assert "topology_spread" in message and "maxSkew" in message and "greater than or equal to 1" in message


def test_min_domains_with_schedule_anyway_is_rejected(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["topology_spread"] = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}
    ]
    message = str(spec_error(write(tmp_path, data)))
    assert "minDomains applies only with whenUnsatisfiable: DoNotSchedule" in message


def test_unknown_anti_affinity_field_is_rejected(tmp_path: Path) -> None:
    data = minimal()
    job0(data)["anti_affinity"] = [{"topology_key": HOST, "weigth": 5}]
    assert "weigth" in str(spec_error(write(tmp_path, data)))


def test_generator_classes_carry_constraints(tmp_path: Path) -> None:
    """A generated class's topology_spread / anti_affinity reach every job it generates."""
    data = minimal()
    data["workload"] = {
        "generator": {
            "classes": [
                {
                    "name": "svc",
                    "class": "inference",
                    "arrivals_per_hour": 60,
                    "count": 3,
                    "pods": {"values": [2]},
                    "duration": {"kind": "fixed", "median": 60},
                    "anti_affinity": [{"topology_key": HOST}],
                    "topology_spread": [{"maxSkew": 1, "topologyKey": ZONE}],
                }
            ]
        }
    }
    resolved = load(str(write(tmp_path, data)))
    assert all(j.anti_affinity and j.topology_spread for j in resolved.jobs)


def test_example_replicas_spread_keeps_each_service_job_on_distinct_nodes() -> None:
    """examples/spread: with required hostname anti-affinity every chat job's replicas use distinct nodes
    (the selector is the service's, so skew is counted over all chat pods, not per job); the packed variant
    stacks replicas on shared nodes."""
    examples = Path(__file__).resolve().parents[1] / "examples" / "spread"
    spread_run = run_one(load(str(examples / "replicas-spread.yaml")), "scenario").result
    packed_run = run_one(load(str(examples / "replicas-packed.yaml")), "scenario").result
    stacked = 0
    for job_id in spread_run.jobs.ids:
        if not job_id.startswith("chat-"):
            continue
        nodes = nodes_of(spread_run, job_id)
        assert len(set(nodes)) == len(nodes)
        packed = nodes_of(packed_run, job_id)
        stacked += len(packed) - len(set(packed))
    assert stacked > 0


def test_example_every_chat_bind_respected_zone_skew_and_one_replica_per_node() -> None:
    """Replaying examples/spread/replicas-spread.yaml's binds in order: when each chat pod was bound, its
    zone held at most (fewest-zone count + maxSkew 1 - 1) chat pods already, and its node none (the
    service-wide selector of both rules)."""
    examples = Path(__file__).resolve().parents[1] / "examples" / "spread"
    result = run_one(load(str(examples / "replicas-spread.yaml")), "scenario").result
    chat = {j for j, jid in enumerate(result.jobs.ids) if jid.startswith("chat-")}
    events = []
    for p, j in enumerate(result.pods.job):
        if int(j) in chat and int(result.pods.node[p]) >= 0:
            events.append((int(result.pods.bound_ms[p]), 1, p, int(result.pods.node[p])))
            if int(result.pods.end_ms[p]) >= 0:
                events.append((int(result.pods.end_ms[p]), 0, p, int(result.pods.node[p])))
    per_zone, per_node = Counter[int](), Counter[int]()
    checked = 0
    for _, kind, _, node in sorted(events):  # releases first, binds of one instant in pod order
        if kind == 0:
            per_zone[node % 3] -= 1
            per_node[node] -= 1
            continue
        assert per_node[node] == 0
        assert per_zone[node % 3] + 1 - min(per_zone[z] for z in range(3)) <= 1
        per_zone[node % 3] += 1
        per_node[node] += 1
        checked += 1
    assert checked >= 20


def test_gang_members_keep_anti_affinity_between_themselves() -> None:
    """A gang with required hostname anti-affinity: placed one member per node when there are enough nodes
    (trial binds count for the next member), and held back as a whole when there are not."""
    gang = job("g", gpus=1, runtime=100, pods=3, gang=True, anti_affinity=[{"topology_key": HOST}])
    enough = run_one(scenario([pool(count=3)], [gang]), "most-allocated").result
    assert sorted(nodes_of(enough, "g")) == [0, 1, 2]
    short = run_one(scenario([pool(count=2)], [gang], horizon_s=50), "most-allocated").result
    assert nodes_of(short, "g") == [-1, -1, -1]


def test_required_zone_affinity_follows_the_pod_it_names_and_waits_for_it() -> None:
    """A web job with required zone affinity to the db job's pods, queued ahead of db: it cannot bind
    until db runs somewhere, then goes to db's zone (retried once db's bind makes it fit); with no db at
    all it stays pending with kube-scheduler's affinity message."""
    pools = [pool("za", count=2, zones=["zone-a"]), pool("zb", count=2, zones=["zone-b"])]
    term = {"topology_key": ZONE, "label_selector": {"matchLabels": {"fleetlab.io/job": "db"}}}
    web = job("web", gpus=1, runtime=100, submit_s=0, pod_affinity=[term])
    db = job("db", gpus=8, runtime=100, submit_s=0, image={"name": "db", "size": "2Gi"})
    result = run_one(scenario(pools, [web, db], horizon_s=3600), "least-allocated").result
    zone_of = {0: "zone-a", 1: "zone-a", 2: "zone-b", 3: "zone-b"}
    (web_node,), (db_node,) = nodes_of(result, "web"), nodes_of(result, "db")
    assert zone_of[web_node] == zone_of[db_node] and web_node != db_node
    assert not result.pending
    alone = run_one(scenario(pools, [web], horizon_s=600), "least-allocated").result
    (pending,) = alone.pending
    assert pending.message == "0/4 nodes are available: 4 node(s) didn't match pod affinity rules."

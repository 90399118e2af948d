"""Kueue topology-aware scheduling in the run (Kueue v0.13 line, TAS beta): workloads admitted through a
TAS flavor get a topology assignment before admission, and their pods are placed where it says.

* One :class:`~fleetlab.placement.tas.snapshot.TasSnapshot` per ResourceFlavor with ``topologyName``,
  built once and kept current: nodes join and leave it as they become Ready and schedulable or not (checked
  when the cluster's topology generation moves), pods no TAS workload owns count against their node when
  bound and stop counting when they leave, admitted workloads' assignments add their usage and remove it
  when they finish or are evicted. Nothing is rebuilt per event.
* Admission: Kueue's quota decides first; a head whose quota fits is admitted only when
  ``find_assignments`` places its PodSet (the admission manager's topology gate). A PodSet asks for TAS
  with ``topology_required`` / ``topology_preferred`` (``podset-required-topology`` /
  ``-preferred-topology``) or the ``kueue.x-k8s.io/podset-*`` annotations (unconstrained, slices), or by
  being admitted to a ClusterQueue whose flavors are all TAS flavors (Kueue's implied request:
  unconstrained at the lowest level). A PodSet that does not fit waits with Kueue's message, set aside
  until its flavor gains room (a node joins, a pod leaves one of its nodes, a TAS workload ends) or quota
  is released in its cohort.
* Placement: the assignment goes into the pod spec as the topology ungater pins pods: a gang's pods are
  bound to the assigned domains, so many in each (``PodSpec.topology_assignment``, the gang placer); a
  single pod gets its domain's labels as nodeSelector; the pods of a multi-pod job placed one by one are
  kept to the assigned domains by required node affinity (how many go to each is not enforced).
* Node failure (``TASFailedNodeReplacement``): when a node holding an admitted workload's pods goes away
  (failure, removal, a spot reclaim), ``replace_node`` moves that node's pods to another domain — inside
  the same domain of a required level — and the workload stays admitted, its evicted pods placed again
  by the new assignment; when no replacement fits, Kueue evicts the workload (it releases its quota and
  waits again).

Not modelled: preemption to make topology room (a head that fits quota but not the topology waits),
TAS profiles other than BestFit, balanced placement, PodSet groups and the 30 s NotReady grace before a
replacement.

Subscribes to ``bind``, ``release`` and ``tick``; the Kueue bridge calls it at admission, release and
eviction. May change: a TAS job's pod spec (``respec``); asks the admission manager to retry set-aside heads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from fleetlab.admission.manager import Workload
from fleetlab.model.job import Job
from fleetlab.model.kube import (
    Affinity,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from fleetlab.model.queues import QueueConfig
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.tas.assign import TasPodSet, TopologyAssignment, find_assignments, replace_node
from fleetlab.placement.tas.from_model import job_podset, tas_flavor
from fleetlab.placement.tas.snapshot import HOSTNAME, TasNode, TasSnapshot
from fleetlab.sim.handle import EngineHandle

PODSET = "main"


@dataclass
class _Assigned:
    """An admitted TAS workload: its flavor's snapshot, its PodSet and where its pods go."""

    flavor: str
    podset: TasPodSet
    assignment: TopologyAssignment
    spec: PodSpec  # the admitted pod spec before the assignment is added


class KueueTopology:
    """The TAS snapshots of a run and the topology assignment of every admitted TAS workload."""

    def __init__(self, sim: EngineHandle, config: QueueConfig, leaving: Callable[[], int] | None) -> None:
        self.sim = sim
        #: The node slot a node lifecycle is draining because the node goes away (-1: none).
        self.leaving = leaving
        levels = {
            t.metadata.name: tuple(level.node_label for level in t.spec.levels) for t in config.topologies
        }
        self.snapshots: dict[str, TasSnapshot] = {}
        for flavor in config.resource_flavors:
            name = flavor.spec.topology_name
            if name is not None and name in levels:
                self.snapshots[flavor.name] = TasSnapshot(tas_flavor(flavor, levels[name]), ())
        #: Per TAS flavor the ClusterQueues that admit to it; ClusterQueues whose flavors are all TAS.
        self.queues_of: dict[str, list[str]] = {f: [] for f in self.snapshots}
        self.tas_only: set[str] = set()
        for cq in config.cluster_queues:
            used = {f.name for group in cq.spec.resource_groups for f in group.flavors}
            for flavor_name in sorted(used & set(self.snapshots)):
                self.queues_of[flavor_name].append(cq.name)
            if used and used <= set(self.snapshots):
                self.tas_only.add(cq.name)
        infos = sim.node_infos
        #: Per node slot the TAS flavors whose nodeLabels it carries (fixed for the run), and per flavor the
        #: node slots in its tree now.
        self.node_flavors: list[list[str]] = [
            [f for f, snap in self.snapshots.items() if _carries(info.labels, snap.flavor.node_labels)]
            for info in infos
        ]
        self.members: dict[str, set[int]] = {f: set() for f in self.snapshots}
        self.assigned: dict[int, _Assigned] = {}
        #: Pods no TAS workload owns, bound to a node of a TAS flavor: the requests they count with.
        self.charged: dict[int, tuple[int, tuple[tuple[str, int], ...]]] = {}
        #: ClusterQueues with a head set aside because its topology did not fit (woken when room appears).
        self.waiting: set[str] = set()
        self.wake: Callable[[str], None] | None = None
        #: A head was set aside for its topology since the last ``take_refused``.
        self.refused = False
        self.replacements = 0
        self.replacement_failures = 0
        self._generation = -1
        self._pods = sim.job_table.column("pods")
        on = sim.on
        on.bind.append(self.bound)
        on.release.append(self.released)
        on.tick.append(self.sync)

    # -- the flavor trees ----------------------------------------------------------------------------
    def sync(self, now: int) -> None:
        """Nodes that became Ready and schedulable join their flavors' trees; others leave them."""
        state = self.sim.state
        if state.topology_generation == self._generation:
            return
        self._generation = state.topology_generation
        usable = (state.ready & ~state.unschedulable).tolist()
        grew: set[str] = set()
        for node, flavors in enumerate(self.node_flavors):
            for flavor in flavors:
                members = self.members[flavor]
                if usable[node] and node not in members:
                    members.add(node)
                    self.snapshots[flavor].add_node(self._tas_node(node))
                    grew.add(flavor)
                elif not usable[node] and node in members:
                    members.discard(node)
                    self.snapshots[flavor].remove_node(self.sim.node_infos[node].name)
        for flavor in sorted(grew):
            self._room(flavor)

    def _tas_node(self, node: int) -> TasNode:
        info = self.sim.node_infos[node]
        return TasNode(info.name, info.labels, dict(info.allocatable), info.taints)

    def _room(self, flavor: str) -> None:
        """The flavor gained room: retry the ClusterQueues that set a head aside for its topology."""
        woken = [cq for cq in self.queues_of[flavor] if cq in self.waiting]
        if woken and self.wake is not None:
            for cq in woken:
                self.waiting.discard(cq)
                self.wake(cq)

    # -- pods no TAS workload owns -------------------------------------------------------------------
    def bound(self, pod: int, node: int, compiled: CompiledPod, whole_gpus: int) -> None:
        """A pod of a job without a topology assignment counts against its node's leaf."""
        flavors = self.node_flavors[node]
        if not flavors or self.sim.book.job_at[pod] in self.assigned:
            return
        requests = compiled.spec.requests
        self.charged[pod] = (node, requests)
        name = self.sim.node_infos[node].name
        for flavor in flavors:
            self.snapshots[flavor].node_usage(name, dict(requests), 1)

    def released(self, pod: int, node: int) -> None:
        """The pod left: its node has that room again."""
        found = self.charged.pop(pod, None)
        if found is None:
            return
        name = self.sim.node_infos[node].name
        for flavor in self.node_flavors[node]:
            self.snapshots[flavor].node_usage(name, dict(found[1]), -1)
            self._room(flavor)

    # -- admission -----------------------------------------------------------------------------------
    def assign(
        self, job: int, workload: Workload, cluster_queue: str, flavors: Mapping[str, Mapping[str, str]]
    ) -> str | None:
        """The admission gate: None when the workload needs no topology assignment or one was found (its
        usage counted from now), else Kueue's message for the PodSet that does not fit."""
        flavor = next((f for f in sorted(set(flavors.get(PODSET, {}).values())) if f in self.snapshots), None)
        if flavor is None:
            return None
        template = self.sim.job_table.template_of(job)
        requested = _requests_topology(template)
        if not requested and cluster_queue not in self.tas_only:
            return None  # a PodSet without TAS annotations in a ClusterQueue that also has other flavors
        pods = workload.podsets[0].count if workload.podsets else int(self._pods[job])
        podset = replace(job_podset(template), count=pods)
        snap = self.snapshots[flavor]
        found = find_assignments(snap, [podset])[PODSET]
        if isinstance(found, str):
            self.waiting.add(cluster_queue)
            self.refused = True
            return f"couldn't assign flavors to pod set {PODSET}: {found}"
        self._count(snap, podset, found, 1)
        self.assigned[job] = _Assigned(flavor, podset, found, PodSpec(requests=()))
        return None

    def take_refused(self) -> bool:
        """Whether a head was set aside for its topology since the last call: Kueue then runs another
        cycle at once, in which the next head of that queue is nominated."""
        refused, self.refused = self.refused, False
        return refused

    def placed_spec(self, job: int, spec: PodSpec) -> PodSpec:
        """The admitted pod spec with the job's assignment in it (unchanged for a job without one)."""
        assigned = self.assigned.get(job)
        if assigned is None:
            return spec
        assigned.spec = spec
        return self._pinned(job, spec, assigned.assignment)

    def _pinned(self, job: int, spec: PodSpec, assignment: TopologyAssignment) -> PodSpec:
        domains = tuple(
            (tuple(zip(assignment.levels, d.values, strict=True)), d.count) for d in assignment.domains
        )
        sim = self.sim
        pods = int(self._pods[job])
        if bool(sim.job_columns.gang[job]) and pods > 1 and sim.config.gang_scheduling:
            return replace(spec, topology_assignment=domains)
        if len(domains) == 1:
            selector = dict(spec.node_selector) | dict(domains[0][0])
            return replace(spec, node_selector=tuple(sorted(selector.items())))
        return replace(spec, affinity=within_domains(spec.affinity, [d for d, _ in domains]))

    def release(self, job: int) -> None:
        """The workload finished or was evicted: its assignment's usage goes."""
        assigned = self.assigned.pop(job, None)
        if assigned is None:
            return
        self._count(self.snapshots[assigned.flavor], assigned.podset, assigned.assignment, -1)
        self._room(assigned.flavor)

    @staticmethod
    def _count(snap: TasSnapshot, podset: TasPodSet, assignment: TopologyAssignment, sign: int) -> None:
        for domain in assignment.domains:
            snap.add_tas_usage(domain.values, podset.requests, domain.count, sign)

    # -- node failure --------------------------------------------------------------------------------
    def replaced(self, job: int, pod: int) -> bool:
        """A pod of an admitted TAS workload is evicted: when its node is going away, find the workload a
        replacement for that node (the workload stays admitted, True), else False (Kueue evicts it)."""
        assigned = self.assigned.get(job)
        node = int(self.sim.book.node_at[pod])
        if assigned is None or self.leaving is None or self.leaving() != node or node < 0:
            return False
        snap = self.snapshots[assigned.flavor]
        name = self.sim.node_infos[node].name
        if node in self.members[assigned.flavor]:
            self.members[assigned.flavor].discard(node)
            snap.remove_node(name)
        if not any(_names_node(d.values, snap, name) for d in assigned.assignment.domains):
            return True  # an earlier pod of the workload on this node already moved it
        found = replace_node(snap, assigned.podset, assigned.assignment, name)
        if isinstance(found, str):
            self.replacement_failures += 1
            return False
        self.replacements += 1
        self._count(snap, assigned.podset, assigned.assignment, -1)
        self._count(snap, assigned.podset, found, 1)
        assigned.assignment = found
        self.sim.respec(job, self._pinned(job, assigned.spec, found))
        return True


def _carries(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


def _names_node(values: Sequence[str], snap: TasSnapshot, name: str) -> bool:
    """Whether an assignment domain is the node ``name`` (the lowest level is the hostname)."""
    return snap.levels[-1] == HOSTNAME and values[-1] == name


def _requests_topology(job: Job) -> bool:
    """The job's PodSet asks for TAS itself (fleetlab's gang topology fields or Kueue's annotations)."""
    return bool(
        job.topology_required
        or job.topology_preferred
        or any(k.startswith("kueue.x-k8s.io/podset-") for k in job.annotations)
    )


def within_domains(affinity: Affinity | None, domains: Sequence[tuple[tuple[str, str], ...]]) -> Affinity:
    """Required node affinity keeping pods to any of ``domains`` (each the node labels selecting it), ANDed
    with the pod's own required terms (terms are ORed, a term's expressions ANDed)."""
    node_affinity = affinity.node_affinity if affinity is not None else None
    required = node_affinity.required if node_affinity is not None else None
    own = required.node_selector_terms if required is not None else (NodeSelectorTerm(),)
    terms = [
        term.model_copy(
            update={
                "match_expressions": (
                    *term.match_expressions,
                    *(NodeSelectorRequirement(key=k, operator="In", values=(v,)) for k, v in domain),
                )
            }
        )
        for term in own
        for domain in domains
    ]
    selector = NodeSelector.model_validate({"nodeSelectorTerms": terms})
    updated = (node_affinity or NodeAffinity()).model_copy(update={"required": selector})
    return (affinity or Affinity()).model_copy(update={"node_affinity": updated})


def uses_tas(config: QueueConfig | None) -> bool:
    """Whether a Kueue section has a ResourceFlavor naming a Topology it defines."""
    if config is None:
        return False
    names = {t.metadata.name for t in config.topologies}
    return any(f.spec.topology_name in names for f in config.resource_flavors)

"""The scheduling framework's shapes: a compiled pod, filter and score plugin bases, and the FitError.

Modelled on kube-scheduler's framework: each plugin implements one extension point, failure reasons are
data, and the aggregate ``0/N nodes are available: ...`` message is assembled from the same filter results
that decide placement, so an explanation can never disagree with a decision.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fleetlab.model.dra import PodClaims
from fleetlab.model.kube import Affinity, Toleration
from fleetlab.model.pod_constraints import (
    LabelSelector,
    PodAffinityTerm,
    PodAntiAffinityTerm,
    TopologySpreadConstraint,
)
from fleetlab.placement.state import BoolArray, ClusterState, IntArray

#: One node's (allocatable, requested, nonzero_requested) rows as Python lists, for one-node rescoring.
NodeRows = tuple[list[int], list[int], list[int]]


@dataclass(frozen=True)
class PodSpec:
    """What placement needs to know about a pod: requests and constraints (shared by a job's pods)."""

    requests: tuple[tuple[str, int], ...]
    tolerations: tuple[Toleration, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    affinity: Affinity | None = None
    image: str | None = None
    image_size: int = 0
    containers: int = 1
    #: Every container image (init containers included) when the pod has more than ``image``.
    images: tuple[str, ...] = ()
    #: Requests with no cpu/memory key get the scorers' non-zero defaults only when the key is absent.
    explicit_keys: frozenset[str] = frozenset()
    #: (milli-cpu, memory) the scorers count when the pod's containers are known (a snapshot pod): the
    #: non-zero defaults added per container that lacks the key; None derives them from ``containers``.
    scoring_requests: tuple[int, int] | None = None
    #: A share of one GPU: (thousandths, bytes of its memory); (0, 0) for pods without one.
    gpu_share: tuple[int, int] = (0, 0)
    #: Pod labels and namespace; set only for pods with spread / anti-affinity (others share one spec).
    labels: tuple[tuple[str, str], ...] = ()
    namespace: str = "default"
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    anti_affinity: tuple[PodAntiAffinityTerm, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    #: Selector of the Service / ReplicaSet owning the pod: the profile's default constraints use it.
    default_spread_selector: LabelSelector | None = None
    #: The pod's ResourceClaims (DRA), checked by the DynamicResources plugin when one is attached.
    claims: PodClaims | None = None
    #: Kueue TAS: the domains (each as the node labels that select it) and how many of the job's pods go
    #: to each, as the topology ungater pins them; the gang placer binds the pods there.
    topology_assignment: tuple[tuple[tuple[tuple[str, str], ...], int], ...] = ()

    @property
    def pod_dependent(self) -> bool:
        """Whether placement depends on other pods: spread, anti-affinity, default spreading, or labels that
        bound pods' anti-affinity terms may select."""
        return bool(
            self.labels
            or self.topology_spread
            or self.anti_affinity
            or self.pod_affinity
            or self.default_spread_selector is not None
        )

    @property
    def request_map(self) -> dict[str, int]:
        """Requests as a dict."""
        return dict(self.requests)


@dataclass
class CompiledPod:
    """A pod spec turned into arrays against one cluster state, plus per-plugin cached results."""

    key: Hashable
    spec: PodSpec
    request: IntArray
    nonzero: IntArray
    request_cols: IntArray
    tolerations: tuple[Toleration, ...]
    cache: dict[str, Any] = field(default_factory=dict)
    static_mask: BoolArray | None = None
    static_generation: int = -1
    #: The pod's label set in ``ClusterState.pod_labels`` (-1: it counts for no selector).
    label_set: int = -1
    #: ``ClusterState.usage_delta`` of ``request`` and ``nonzero``: what a bind adds to its node's row.
    usage_delta: IntArray | None = None


@dataclass(frozen=True)
class FilterFailure:
    """Why one plugin rejected some nodes: reason string -> node count, and whether preemption could help."""

    plugin: str
    reasons: dict[str, int]
    nodes: int
    unresolvable: bool


@dataclass(frozen=True)
class FitError:
    """A pod found no feasible node: the per-plugin failures and kube-scheduler's aggregate message."""

    num_nodes: int
    failures: tuple[FilterFailure, ...]
    #: A PreFilter plugin's Unschedulable message (then the per-node reasons, all copies of it, are left
    #: out) and the PostFilter's (preemption's) message, as upstream ``Diagnosis`` carries them.
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    @property
    def histogram(self) -> dict[str, int]:
        """Reason -> count over all nodes (counts may sum to more than the node count)."""
        counts: Counter[str] = Counter()
        for failure in self.failures:
            counts.update(failure.reasons)
        return dict(counts)

    @property
    def message(self) -> str:
        """``0/N nodes are available: ...`` in FitError.Error()'s format: the PreFilter message, or the
        per-node reasons (parts sorted as strings), each closed by ".", then the PostFilter message."""
        if self.num_nodes == 0:
            return "no nodes available to schedule pods"
        msg = f"0/{self.num_nodes} nodes are available:"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            parts = sorted(f"{count} {reason}" for reason, count in self.histogram.items())
            if parts:
                msg += " " + ", ".join(parts) + "."
        if self.post_filter_msg:
            msg += f" {self.post_filter_msg}"
        return msg


class FilterPlugin(ABC):
    """A Filter extension point. ``static`` plugins depend only on node facts, so results are cached."""

    name: ClassVar[str]
    static: ClassVar[bool] = False

    def pre_filter(self, state: ClusterState, pod: CompiledPod) -> str | None:
        """PreFilter: a reason no node can take the pod (then Filter is not consulted), or None."""
        return None

    @abstractmethod
    def passes(self, state: ClusterState, pod: CompiledPod) -> BoolArray:
        """Per node, whether the pod passes this filter (all nodes, readiness ignored)."""

    @abstractmethod
    def failure(self, state: ClusterState, pod: CompiledPod, failing: BoolArray) -> FilterFailure:
        """Reasons for the nodes in ``failing`` (all of which this plugin rejected)."""


class ScorePlugin(ABC):
    """A Score extension point (with its NormalizeScore folded in); returns None to Skip.

    ``per_node`` plugins score a node from that node's state alone (no normalisation across nodes), so
    the scheduler may cache their scores and rescore only the nodes a bind or release changed. Of the pod
    they read only its request and non-zero request vectors: pod specs equal in those share one cache of
    scores by node usage (specs that differ only by a selector, such as one shape per zone).
    """

    name: ClassVar[str]
    per_node: ClassVar[bool] = False

    def uniform_for(self, state: ClusterState, pod: CompiledPod) -> bool:
        """True when, for this pod, the plugin skips or gives every node one score whatever the cluster's
        usage, so it can never change a choice and the scheduler need not ask it (False when unsure)."""
        return False

    def score_one(self, state: ClusterState, pod: CompiledPod, rows: NodeRows) -> int | None:
        """One node's score from its rows (only ``per_node`` plugins); must equal ``score`` on that node."""
        raise NotImplementedError(f"{self.name} is not a per-node plugin")

    #: ``score_rows`` is implemented: many pod specs are scored on the same nodes in one pass.
    rows_batched: ClassVar[bool] = False

    def score_rows(self, state: ClusterState, pods: Sequence[CompiledPod], nodes: IntArray) -> IntArray:
        """Scores of every pod in ``pods`` (rows) on ``nodes`` (columns), 0 where the plugin skips a pod;
        row ``i`` must equal ``score(state, pods[i], nodes)`` (only ``per_node`` plugins)."""
        raise NotImplementedError(f"{self.name} scores one pod at a time")

    @abstractmethod
    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | int | None:
        """Normalised scores 0..100 for the feasible ``nodes`` (an int when every node scores the same),
        or None when the plugin skips this pod."""


def count_true(mask: BoolArray) -> int:
    """Number of True entries, as a Python int."""
    return int(np.count_nonzero(mask))

"""Node state as arrays: one class owns every per-node number the filters and scorers read.

Rows are nodes, columns resources. ``requested`` holds true requests (the Fit filter's view);
``nonzero_requested`` holds cpu/memory with kube-scheduler's non-zero defaults (the scorers' view).
Binds and releases update single rows, so the cost of a placement never grows with a Python loop over nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.kube import Taint
from fleetlab.model.resources import BASE_RESOURCES, CPU, GPU, MEMORY, PODS
from fleetlab.placement.devices import GpuDevices
from fleetlab.placement.element_views import int_elements
from fleetlab.placement.label_index import LabelIndex
from fleetlab.placement.pod_labels import PodLabelCounts

if TYPE_CHECKING:
    from fleetlab.placement.sharing import ShareState

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
#: A node's row of usage (requested, non-zero requested, free, allocatable class) as bytes (fixed widths,
#: so equal bytes mean equal values): equal keys, equal fit and per-node scores. Bytes keep their hash once
#: computed, so every pod spec's memo looks one up without hashing the rows again.
UsageKey = bytes


def normalized_image_name(name: str) -> str:
    """Upstream ``normalizedImageName``: ``:latest`` is added to a name with neither a tag nor a digest."""
    if "@" in name or ":" in name.rsplit("/", 1)[-1]:
        return name
    return f"{name}:latest"


@dataclass(frozen=True)
class NodeInfo:
    """Static facts of one node, as the state is built from them."""

    name: str
    pool: int
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: dict[str, int]
    gpu_model: str | None = None
    unschedulable: bool = False


class SharePolicyView(Protocol):
    """What the SharePolicy score plugin reads from the GPU-sharing summaries an FGD-paper policy scores on
    (``fleetlab.placement.share_view.ShareView``, attached by the simulator when a profile uses one)."""

    rng: np.random.Generator

    def sync(self) -> ShareState:
        """The summaries, brought up to date with every bind and release so far."""
        ...


@dataclass
class TaintClasses:
    """Nodes grouped by identical taint lists, so toleration checks run once per group."""

    sets: list[tuple[Taint, ...]] = field(default_factory=list)
    of_node: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class ClusterState:
    """All nodes' capacity, usage, readiness and labels; the single owner of node arrays."""

    def __init__(self, nodes: Sequence[NodeInfo], extra_resources: Sequence[str] = ()) -> None:
        names = list(BASE_RESOURCES)
        for node in nodes:
            for r in node.allocatable:
                if r not in names:
                    names.append(r)
        for r in extra_resources:
            if r not in names:
                names.append(r)
        self.resource_names: tuple[str, ...] = tuple(names)
        self.column: dict[str, int] = {r: i for i, r in enumerate(names)}
        n, width = len(nodes), len(names)
        self.n = n
        self.node_names: list[str] = [node.name for node in nodes]
        self.pool = np.asarray([node.pool for node in nodes], dtype=np.int64)
        self.gpu_model: list[str | None] = [node.gpu_model for node in nodes]
        self.allocatable = np.zeros((n, width), dtype=np.int64)
        for i, node in enumerate(nodes):
            for r, amount in node.allocatable.items():
                self.allocatable[i, self.column[r]] = amount
        _, alloc_class = np.unique(self.allocatable, axis=0, return_inverse=True)
        #: Nodes with identical allocatable share a class id (memo keys for per-node scores).
        self.alloc_class: list[int] = [int(c) for c in np.asarray(alloc_class).reshape(-1)]
        self.width = width
        #: Per node one row of ``usage``: its requested (``width`` columns), non-zero requested (2), free
        #: (``width``) and allocatable class (1). ``requested``, ``nonzero_requested`` and ``free`` are
        #: views of it, so a bind or release is one row operation (``usage_delta``) and a UsageKey the
        #: row's bytes.
        self.row_width = 2 * width + 3
        usage = np.zeros((n, self.row_width), dtype=np.int64)
        self.usage = usage
        self.requested = usage[:, :width]
        self.nonzero_requested = usage[:, width : width + 2]
        self.free = usage[:, width + 2 : 2 * width + 2]
        self.free[:] = self.allocatable
        usage[:, -1] = self.alloc_class
        #: ``requested`` element by element (``node * row_width + column``), for one-number reads on hot
        #: paths.
        self.requested_at = int_elements(usage)
        self.ready = np.zeros(n, dtype=bool)
        self.ready_count = 0
        self.unschedulable = np.asarray([node.unschedulable for node in nodes], dtype=bool)
        self.labels = LabelIndex([node.labels for node in nodes])
        #: Bound pods counted by selector (PodTopologySpread, InterPodAffinity); fed by ``label_set`` binds.
        self.pod_labels = PodLabelCounts(self.labels)
        self.taint_classes = _taint_classes(nodes)
        self.images: dict[str, BoolArray] = {}
        #: Bumped whenever a node gains or loses an image or an image's size on a node changes.
        self.image_generation = 0
        self.image_nodes: dict[str, int] = {}
        #: Per image, the size each node reports for it (bytes; 0 where absent).
        self.image_sizes: dict[str, IntArray] = {}
        #: Per node, its row of ``usage`` as a view made once (a bind or release updates it in place
        #: without indexing first).
        self._usage_rows = [usage[i] for i in range(n)]
        self.pod_count = np.zeros(n, dtype=np.int64)
        self._pod_count_at = int_elements(self.pod_count)
        #: Node indices whose usage changed, in order; schedulers rescore only these incrementally.
        self.changes: list[int] = []
        #: How many times ``changes`` was emptied (a position in it holds only while this is unchanged).
        self.changes_cleared = 0
        #: Per node, its UsageKey (None until asked for since its usage last changed).
        self.usage_key: list[UsageKey | None] = [None] * n
        #: Bumped whenever a change could make a previously unschedulable pod fit.
        self.release_generation = 0
        #: Set once a pod with pod affinity is compiled: then a bind can make a waiting pod fit, so binds
        #: count as releases for the queue's retry rule.
        self.binds_can_help = False
        #: Bumped whenever node membership, readiness or cordon state changes (static masks go stale).
        self.topology_generation = 0
        #: Bumped whenever room no pod holds is taken or given back (``hold``: a background load).
        self.hold_generation = 0
        self.gpu_col = self.column[GPU]
        self.cpu_col = self.column[CPU]
        self.mem_col = self.column[MEMORY]
        self.pods_col = self.column[PODS]
        #: Per-GPU usage (fleetlab.placement.devices.GpuDevices) when the simulator tracks it.
        self.devices: GpuDevices | None = None
        #: GPU-sharing summaries for an FGD-paper policy (fleetlab.placement.share_view), when one is used.
        self.share_view: SharePolicyView | None = None

    # -- lifecycle -----------------------------------------------------------------------------------
    def set_ready(self, node: int, ready: bool = True) -> None:
        """Make a node visible to (or hidden from) the scheduler."""
        if bool(self.ready[node]) != ready:
            self.ready_count += 1 if ready else -1
        self.ready[node] = ready
        self.topology_generation += 1
        if ready:
            self.release_generation += 1

    def set_unschedulable(self, node: int, unschedulable: bool) -> None:
        """Cordon or uncordon a node."""
        self.unschedulable[node] = unschedulable
        self.topology_generation += 1
        if not unschedulable:
            self.release_generation += 1

    # -- accounting of pods --------------------------------------------------------------------------
    def usage_delta(self, request: IntArray, nonzero: IntArray) -> IntArray:
        """What binding a pod of ``request`` and ``nonzero`` adds to its node's row of usage (requested
        up, non-zero requested up, free down, the class unchanged); a compiled pod keeps its own."""
        return np.concatenate([request, nonzero, -request, [0]]).astype(np.int64)

    def bind(
        self, node: int, request: IntArray, nonzero: IntArray, labels: int = -1, adds: IntArray | None = None
    ) -> None:
        """Add a pod's requests (``request`` has 1 in the pods column) to a node; ``labels``, a label set
        of ``pod_labels``, makes the pod count for spread and anti-affinity. ``adds``: the pod's
        ``usage_delta``, where the caller keeps it."""
        if labels >= 0:
            self.pod_labels.add(node, labels, 1)
            if self.binds_can_help:
                self.release_generation += 1
        # In-place on a row view: ``a[node] += x`` would also write the row back onto itself.
        row = self._usage_rows[node]
        row += self.usage_delta(request, nonzero) if adds is None else adds
        self._pod_count_at[node] += 1
        self.changes.append(node)
        self.usage_key[node] = None

    def release(
        self, node: int, request: IntArray, nonzero: IntArray, labels: int = -1, adds: IntArray | None = None
    ) -> None:
        """Remove a finished pod's requests from a node (``adds`` as for ``bind``)."""
        if labels >= 0:
            self.pod_labels.add(node, labels, -1)
        row = self._usage_rows[node]
        row -= self.usage_delta(request, nonzero) if adds is None else adds
        self._pod_count_at[node] -= 1
        self.release_generation += 1
        self.changes.append(node)
        self.usage_key[node] = None

    def note_room(self) -> None:
        """Room became reachable without a release (a running job stopped being exempt from preemption):
        move the release generation so every waiting spec is tried again in this step's cycle."""
        self.release_generation += 1

    def keep_trial(self, nodes: list[int]) -> None:
        """Trial binds (without a label set) on ``nodes`` stay as the pods' real binds: what rolling them
        back and binding them again would leave behind, without the sums that cancel (the change log and
        the release generation move as they would, so every cache and scheduling cycle sees the same)."""
        self.release_generation += len(nodes)
        self.changes.extend(reversed(nodes))
        self.changes.extend(nodes)

    def hold(self, node: int, delta: IntArray) -> None:
        """Take (``delta`` > 0) or give back room that no pod holds (a background load): placement sees it
        as requested; no pod is counted."""
        self.requested[node] += delta
        self.free[node] -= delta
        self.nonzero_requested[node, 0] += int(delta[self.cpu_col])
        self.hold_generation += 1
        if (delta < 0).any():
            self.release_generation += 1
        self.changes.append(node)
        self.usage_key[node] = None

    def node_usage_key(self, node: int) -> UsageKey:
        """The node's UsageKey, computed once per change of its usage and shared by every pod spec. Code
        that adjusts ``requested`` outside ``bind``/``release`` does it right after one of them, before any
        scheduler reads the key. Its free part adds nothing to the requested and class parts (free is
        allocatable less requested, and the class fixes allocatable); it comes with the row's bytes."""
        key: bytes = self._usage_rows[node].tobytes()
        self.usage_key[node] = key
        return key

    def add_image(self, node: int, image: str, size: int = 0) -> None:
        """Record that ``node`` now holds ``image`` of ``size`` bytes, as its ``status.images`` would list it
        (ImageLocality reads both); the name is normalised as upstream (``:latest`` when untagged)."""
        image = normalized_image_name(image)
        present = self.images.get(image)
        if present is None:
            present = np.zeros(self.n, dtype=bool)
            self.images[image] = present
            self.image_nodes[image] = 0
            self.image_sizes[image] = np.zeros(self.n, dtype=np.int64)
        sizes = self.image_sizes[image]
        if not present[node] or sizes[node] != size:
            self.image_generation += 1
        sizes[node] = size
        if not present[node]:
            present[node] = True
            self.image_nodes[image] += 1

    def forget_images(self, node: int) -> None:
        """The node holds no image any more (a new or rebuilt node)."""
        for image, present in self.images.items():
            if present[node]:
                present[node] = False
                self.image_nodes[image] -= 1
                self.image_generation += 1

    def has_image(self, node: int, image: str) -> bool:
        """Whether ``node`` already holds ``image``."""
        present = self.images.get(normalized_image_name(image))
        return bool(present is not None and present[node])

    # -- summaries -----------------------------------------------------------------------------------
    def gpu_totals(self) -> tuple[int, int]:
        """(allocated GPUs, allocatable GPUs) over ready nodes."""
        ready = self.ready
        return int(self.requested[ready, self.gpu_col].sum()), int(
            self.allocatable[ready, self.gpu_col].sum()
        )

    def whole_free_gpu_nodes(self) -> int:
        """Ready GPU nodes with every GPU free: the capacity an 8-GPU job can actually use."""
        gpus = self.allocatable[:, self.gpu_col]
        return int(np.count_nonzero(self.ready & (gpus > 0) & (self.requested[:, self.gpu_col] == 0)))


def _taint_classes(nodes: Sequence[NodeInfo]) -> TaintClasses:
    index: dict[tuple[Taint, ...], int] = {}
    of_node = np.zeros(len(nodes), dtype=np.int64)
    for i, node in enumerate(nodes):
        of_node[i] = index.setdefault(node.taints, len(index))
    return TaintClasses(sets=list(index), of_node=of_node)

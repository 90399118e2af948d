"""One scheduling cycle for one pod: filter, score, select — kube-scheduler's schedule_one.

The Scheduler compiles each distinct pod spec once into request vectors and cached static masks
(NodeUnschedulable, TaintToleration, NodeAffinity depend only on node facts), so per-pod work is a few
array operations over the nodes that pass, never a Python loop over nodes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np

from fleetlab.model.kube import Toleration
from fleetlab.model.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    MEMORY,
    is_extended,
)
from fleetlab.placement.framework import (
    CompiledPod,
    FilterFailure,
    FilterPlugin,
    FitError,
    PodSpec,
    ScorePlugin,
)
from fleetlab.placement.plugins.balanced_allocation import BalancedAllocationScore
from fleetlab.placement.plugins.dynamic_resources import DynamicResources
from fleetlab.placement.plugins.gpu_share import GpuShareFilter, TimeSlicingRequestFilter
from fleetlab.placement.plugins.image_locality import ImageLocalityScore
from fleetlab.placement.plugins.inter_pod_affinity import InterPodAffinityFilter, InterPodAffinityScore
from fleetlab.placement.plugins.node_affinity import NodeAffinityFilter, NodeAffinityScore
from fleetlab.placement.plugins.node_resources_fit import NodeResourcesFitFilter, NodeResourcesFitScore
from fleetlab.placement.plugins.node_unschedulable import NodeUnschedulableFilter
from fleetlab.placement.plugins.pod_topology_spread import PodTopologySpreadFilter, PodTopologySpreadScore
from fleetlab.placement.plugins.share_policy import SharePolicyScore
from fleetlab.placement.plugins.taint_toleration import TaintTolerationFilter, TaintTolerationScore
from fleetlab.placement.profiles import Profile
from fleetlab.placement.state import BoolArray, ClusterState, IntArray, UsageKey

#: Keep incremental caches for at most this many bytes of per-node arrays (oldest specs are dropped).
CACHE_BUDGET_BYTES = 256 * 1024 * 1024
#: When more nodes changed than this fraction of the cluster, a full vectorised rescore is cheaper.
FULL_RESCORE_FRACTION = 8
#: Per pod spec, remembered (fits, score) per distinct node usage; cleared when full.
MEMO_ENTRIES = 4096
#: A catch-up goes node by node unless more than 1/FULL_RESCORE_FRACTION of this many nodes (or of the
#: cluster, if larger) changed: on a small cluster a rebuild's vector pass per scorer costs more than a
#: usage-memo lookup for every node (128 one-CPU nodes of a gang-heavy replay: rebuilds were 11 % of it).
REBUILD_FROM = 1024
#: The change log is cleared (and every cache rebuilt on next use) once it grows this long.
MAX_CHANGE_LOG = 2_000_000
#: ``_Incremental.best`` of a node where the pod does not fit (below every weighted score).
UNFIT = np.iinfo(np.int64).min
#: A catch-up over more changed nodes than this (or than a rebuild's threshold, if lower) is one vector
#: pass for every cached pod spec behind it, when at least BATCH_SPECS specs are behind (with fewer, or
#: fewer nodes, one node at a time is cheaper: measured on bench/workloads.py's mix with 64 shapes).
BATCH_FROM = 96
BATCH_SPECS = 8


@dataclass
class _Incremental:
    """Per pod spec: which nodes fit now and the per-node plugins' weighted score, kept up to date."""

    epoch: int
    log_pos: int
    topology: int
    static: BoolArray
    fits: BoolArray
    #: The number of nodes that fit now.
    n_fit: int
    #: Per node the per-node plugins' weighted score where the pod fits, UNFIT elsewhere (scores of nodes
    #: that do not fit are never read): the choice among fitting nodes when no other plugin can change it
    #: is a max over this one array.
    best: IntArray
    #: The pod's (column, amount) requests, its share of one GPU (None: whole GPUs or none), and its
    #: usage-key memo (one per scoring key, kept across rebuilds): per node usage, whether the pod fits
    #: by its resources and the value ``best`` takes there.
    wanted: list[tuple[int, int]]
    share: tuple[int, int] | None
    memo: dict[UsageKey, tuple[bool, int]]
    #: ``best.data``, ``fits.data`` and ``static.data``, for the catch-up's one-node reads and writes (a
    #: memoryview item costs a fraction of numpy's one-element access, about a list's).
    best_view: memoryview
    fits_view: memoryview
    static_view: memoryview
    #: The row of ``best`` and ``fits`` in the scheduler's :class:`_Rows`.
    row: int = -1
    #: Whether ``best`` alone decides ``select`` (no global scorer applies and the pod depends on no other
    #: pods); None until the first ``select``, which decides it from the pod's cached global scorers.
    by_best: bool | None = None
    #: The request and non-zero request vectors' bytes, all that fits and per-node scores read of the pod.
    scoring: bytes = b""


class _Rows:
    """Every cached pod spec's ``best``, ``fits`` and static mask as one row of three matrices, so a
    catch-up of many specs reads and writes all their rows in one operation. Each ``_Incremental`` holds
    views of its row; when the matrices grow, the views are made again."""

    def __init__(self, n: int) -> None:
        self.best = np.empty((0, n), dtype=np.int64)
        self.fits = np.zeros((0, n), dtype=bool)
        self.static = np.zeros((0, n), dtype=bool)
        self.free: list[int] = []
        self.users: dict[int, _Incremental] = {}

    def take(self) -> int:
        """A row no spec uses (the matrices double when none is left)."""
        if not self.free:
            old = len(self.best)
            grow = max(8, old)
            n = self.best.shape[1]
            self.best = np.concatenate([self.best, np.full((grow, n), UNFIT, dtype=np.int64)])
            self.fits = np.concatenate([self.fits, np.zeros((grow, n), dtype=bool)])
            self.static = np.concatenate([self.static, np.zeros((grow, n), dtype=bool)])
            self.free = list(range(old + grow - 1, old - 1, -1))
            for inc in self.users.values():
                self.attach(inc)
        return self.free.pop()

    def attach(self, inc: _Incremental) -> None:
        """Point ``inc``'s arrays at its row."""
        row = inc.row
        inc.best, inc.fits, inc.static = self.best[row], self.fits[row], self.static[row]
        inc.best_view, inc.fits_view, inc.static_view = inc.best.data, inc.fits.data, inc.static.data
        self.users[row] = inc

    def give(self, row: int) -> None:
        """The row's spec left the cache."""
        if self.users.pop(row, None) is not None:
            self.free.append(row)


class Scheduler:
    """Places pods on a ClusterState under one Profile; deterministic for a given seed."""

    def __init__(
        self,
        state: ClusterState,
        profile: Profile,
        seed: int = 0,
        extended_resource_toleration: bool = False,
    ) -> None:
        self.state = state
        self.profile = profile
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.extended_resource_toleration = extended_resource_toleration
        version = profile.kubernetes_version
        #: Filter order of the default profile (MultiPoint order), stopping at the first failing plugin.
        self.filters: list[FilterPlugin] = [
            NodeUnschedulableFilter(),
            TaintTolerationFilter(version),
            NodeAffinityFilter(),
            NodeResourcesFitFilter(),
            TimeSlicingRequestFilter(),
            GpuShareFilter(),
            PodTopologySpreadFilter(profile.spread_defaults),
            InterPodAffinityFilter(),
        ]
        #: Filters whose verdict moves with other pods' binds: applied per cycle, only to pods they concern.
        self.pod_filters = self.filters[-2:]
        #: DynamicResources, once attached: asked only about pods with ResourceClaims.
        self.dra: DynamicResources | None = None
        candidates: list[ScorePlugin] = [
            TaintTolerationScore(),
            NodeAffinityScore(),
            NodeResourcesFitScore(profile.strategy, profile.resources, profile.shape),
            BalancedAllocationScore(profile.balanced_resources, version),
            ImageLocalityScore(),
            PodTopologySpreadScore(profile.spread_defaults, profile.spread_system_defaulted),
            InterPodAffinityScore(),
        ]
        if profile.share_policy:
            candidates.append(SharePolicyScore(profile.share_policy))
        self.scorers: list[tuple[ScorePlugin, int]] = [
            (p, profile.plugin_weights.get(p.name, 0))
            for p in candidates
            if profile.plugin_weights.get(p.name, 0) > 0
        ]
        self.local_scorers = [(p, w) for p, w in self.scorers if p.per_node]
        self.global_scorers = [(p, w) for p, w in self.scorers if not p.per_node]
        self._compiled: dict[Hashable, CompiledPod] = {}
        self._cached: OrderedDict[int, CompiledPod] = OrderedDict()
        self._max_cached = max(8, CACHE_BUDGET_BYTES // max(1, state.n * 10))
        self._epoch = 0
        #: ``tie_break: first``: the first of the tied nodes, with no random draw.
        self._first_of_ties = profile.tie_break == "first"
        #: Every per-node scorer scores many pod specs in one pass: large catch-ups are done together.
        self._batched = all(plugin.rows_batched for plugin, _ in self.local_scorers)
        self._rows = _Rows(state.n)
        self._memos: dict[bytes, dict[UsageKey, tuple[bool, int]]] = {}  # per ``_Incremental.scoring``

    # -- compile -------------------------------------------------------------------------------------
    def compile(self, spec: PodSpec) -> CompiledPod:
        """Request vectors and cache slots for a pod spec (memoised per distinct spec)."""
        found = self._compiled.get(spec)
        if found is not None:
            return found
        state = self.state
        request = np.zeros(len(state.resource_names), dtype=np.int64)
        for name, amount in spec.requests:
            request[state.column[name]] += amount
        request[state.pods_col] = 1
        label_set = -1
        if spec.pod_dependent:
            if spec.pod_affinity:
                state.binds_can_help = True
            label_set = state.pod_labels.intern(
                dict(spec.labels), spec.namespace, spec.anti_affinity, spec.pod_affinity
            )
        if spec.scoring_requests is not None:
            nonzero = np.asarray(spec.scoring_requests, dtype=np.int64)
        else:
            explicit = spec.explicit_keys or frozenset(n for n, _ in spec.requests)
            per = spec.containers
            nonzero = np.asarray(
                [
                    request[state.cpu_col] if CPU in explicit else DEFAULT_MILLI_CPU_REQUEST * per,
                    request[state.mem_col] if MEMORY in explicit else DEFAULT_MEMORY_REQUEST * per,
                ],
                dtype=np.int64,
            )
        tolerations = spec.tolerations
        if self.extended_resource_toleration:
            added = tuple(
                Toleration(key=name, operator="Exists", effect="NoSchedule")
                for name, amount in spec.requests
                if amount > 0 and is_extended(name)
            )
            tolerations = tolerations + added
        cols = np.flatnonzero(request > 0).astype(np.int64)
        pod = CompiledPod(
            key=spec,
            spec=spec,
            request=request,
            nonzero=nonzero,
            request_cols=cols,
            tolerations=tolerations,
            label_set=label_set,
            usage_delta=state.usage_delta(request, nonzero),
        )
        self._compiled[spec] = pod
        return pod

    # -- filter --------------------------------------------------------------------------------------
    def static_mask(self, pod: CompiledPod) -> BoolArray:
        """Ready nodes passing every static filter, cached until node membership or cordons change."""
        if pod.static_generation != self.state.topology_generation or pod.static_mask is None:
            mask = self.state.ready.copy()
            for plugin in self.filters:
                if plugin.static:
                    mask &= plugin.passes(self.state, pod)
            pod.static_mask = mask
            pod.cache["static_nodes"] = np.flatnonzero(mask)
            pod.static_generation = self.state.topology_generation
        return pod.static_mask

    def feasible_nodes(self, pod: CompiledPod) -> IntArray:
        """Indices of nodes where the pod fits now."""
        return np.flatnonzero(self.fits_now(pod))

    def attach_dynamic_resources(self, plugin: DynamicResources) -> None:
        """Add the DRA filter (last, as in kube-scheduler's MultiPoint order) for pods with claims."""
        self.dra = plugin
        self.filters.append(plugin)

    def fits_now(self, pod: CompiledPod) -> BoolArray:
        """Per node, whether every filter passes now (pod-dependent filters and DRA included)."""
        fits = self._incremental(pod).fits
        if self.dra is not None and pod.spec.claims is not None:
            fits = fits & self.dra.passes(self.state, pod)
        if not pod.spec.pod_dependent:
            return fits
        return fits & self.pod_filters_pass(pod)

    def fit_count(self, pod: CompiledPod) -> int:
        """How many nodes pass every filter but the pod-dependent ones now (0: the pod fits nowhere, as
        ``select`` would answer without scoring)."""
        return self._incremental(pod).n_fit

    def pod_filters_pass(self, pod: CompiledPod) -> BoolArray:
        """Per node, whether the filters that move with other pods' binds (``pod_filters``) pass now."""
        passed = np.ones(self.state.n, dtype=bool)
        for plugin in self.pod_filters:
            passed &= plugin.passes(self.state, pod)
        return passed

    def _fits(self, pod: CompiledPod, nodes: IntArray) -> BoolArray:
        cols = pod.request_cols
        return np.asarray((self.state.free[nodes][:, cols] >= pod.request[cols]).all(axis=1), dtype=bool)

    def _rebuild(self, pod: CompiledPod) -> _Incremental:
        state = self.state
        static = self.static_mask(pod)
        nodes = np.flatnonzero(static)
        fits = np.zeros(state.n, dtype=bool)
        local = np.zeros(state.n, dtype=np.int64)
        if len(nodes):
            fits[nodes] = self._fits(pod, nodes)
            if any(pod.spec.gpu_share) and state.devices is not None:
                fits[nodes] &= state.devices.share_fits(nodes, *pod.spec.gpu_share)
            for plugin, weight in self.local_scorers:
                scores = plugin.score(state, pod, nodes)
                if scores is not None:
                    local[nodes] += weight * scores
        scoring = pod.request.tobytes() + pod.nonzero.tobytes()
        previous: _Incremental | None = pod.cache.get("incremental")
        row = previous.row if previous is not None else self._rows.take()
        rows = self._rows
        rows.best[row] = np.where(fits, local, UNFIT)
        rows.fits[row] = fits
        rows.static[row] = static
        inc = _Incremental(
            self._epoch,
            len(state.changes),
            state.topology_generation,
            rows.static[row],
            rows.fits[row],
            int(np.count_nonzero(fits)),
            rows.best[row],
            [(int(c), int(pod.request[c])) for c in pod.request_cols],
            pod.spec.gpu_share if any(pod.spec.gpu_share) else None,
            self._memos.setdefault(scoring, {}),
            rows.best[row].data,
            rows.fits[row].data,
            rows.static[row].data,
            row,
            scoring=scoring,
        )
        rows.attach(inc)
        return inc

    def _incremental(self, pod: CompiledPod) -> _Incremental:
        """Bring the pod spec's cached fit mask and per-node scores up to date with the change log."""
        state = self.state
        log = state.changes
        if len(log) > MAX_CHANGE_LOG:
            log.clear()
            state.changes_cleared += 1
            self._epoch += 1
        inc: _Incremental | None = pod.cache.get("incremental")
        rebuilt = False
        if inc is None or inc.topology != state.topology_generation or inc.epoch != self._epoch:
            inc = self._rebuild(pod)
            rebuilt = True
        elif inc.log_pos < len(log):
            changed = set(log[inc.log_pos :])
            if (
                len(changed) > min(BATCH_FROM, state.n // FULL_RESCORE_FRACTION)
                and self._batched
                and inc.share is None
                and self._catch_up_together(inc.log_pos, changed)
            ):
                pass  # every spec behind, this one included, is up to date
            elif len(changed) * FULL_RESCORE_FRACTION > max(state.n, REBUILD_FROM):
                inc = self._rebuild(pod)
                rebuilt = True
            else:
                share, devices = inc.share, state.devices
                share_fits = (  # pods that take a share of one GPU: does a GPU of the node have it
                    partial(devices.share_fits_one, milli=share[0], memory=share[1])
                    if share is not None and devices is not None
                    else None
                )
                self.catch_up_nodes(pod, inc, changed, share_fits)
                inc.log_pos = len(log)
        if rebuilt:
            pod.cache["incremental"] = inc
            self._touch(pod)
            if len(self._cached) > self._max_cached:
                _, oldest = self._cached.popitem(last=False)
                dropped: _Incremental | None = oldest.cache.pop("incremental", None)
                if dropped is not None:
                    self._rows.give(dropped.row)
        elif len(self._cached) * 2 > self._max_cached:
            self._touch(pod)  # recency matters only once the caches near their budget
        return inc

    def catch_up_nodes(
        self,
        pod: CompiledPod,
        inc: _Incremental,
        nodes: Iterable[int],
        share_fits: Callable[[int], bool] | None = None,
    ) -> None:
        """Changed ``nodes`` brought up to date in the pod spec's cache: each statically allowed one's fit
        and per-node score from the usage memo (computed for a usage not seen before), no fit where
        ``share_fits`` says no GPU of the node has the pod's share. The log position is the caller's."""
        state = self.state
        static, fits_view, best_view, memo = inc.static_view, inc.fits_view, inc.best_view, inc.memo
        usage_key, node_usage_key, memo_get = state.usage_key, state.node_usage_key, memo.get
        n_fit = inc.n_fit
        for node in nodes:
            if not static[node]:
                continue
            memo_key = usage_key[node] or node_usage_key(node)
            hit = memo_get(memo_key)
            if hit is None:
                hit = self._memo_entry(pod, node, inc.wanted, memo, memo_key)
            ok, best = hit
            if share_fits is not None and ok and not share_fits(node):
                ok, best = False, UNFIT
            best_view[node] = best
            if ok != fits_view[node]:
                fits_view[node] = ok
                n_fit += 1 if ok else -1
        inc.n_fit = n_fit

    def _catch_up_together(self, since: int, changed: set[int]) -> bool:
        """Bring cached pod specs up to date at once: every spec whose catch-up starts at ``since`` or
        later (the nodes changed since then hold every change it has yet to see), or at the earliest
        start of any spec behind when that adds few nodes. One vector pass over those nodes fits and
        scores all of them (per-node scorers' ``score_rows``); each spec gets exactly what its own
        catch-up or a rebuild would write. False (nothing done) when fewer than BATCH_SPECS specs are
        behind."""
        state = self.state
        log = state.changes
        end = len(log)
        behind: list[tuple[CompiledPod, _Incremental]] = []
        for pod in self._cached.values():
            inc = pod.cache.get("incremental")
            if (
                inc is not None
                and inc.log_pos < end
                and inc.share is None
                and inc.epoch == self._epoch
                and inc.topology == state.topology_generation
            ):
                behind.append((pod, inc))
        if len(behind) < BATCH_SPECS:
            return False
        earliest = min(inc.log_pos for _, inc in behind)
        if earliest < since:
            wider = set(log[earliest:])
            if len(wider) * FULL_RESCORE_FRACTION <= state.n:
                since, changed = earliest, wider
        members = [(pod, inc) for pod, inc in behind if inc.log_pos >= since]
        nodes = np.fromiter(sorted(changed), dtype=np.int64, count=len(changed))
        incs = [inc for _, inc in members]
        rows = np.fromiter((inc.row for inc in incs), dtype=np.int64, count=len(incs))
        at = np.ix_(rows, nodes)
        store = self._rows
        first: dict[bytes, int] = {}  # each scoring key fitted and scored once, on its first spec
        each = [first.setdefault(inc.scoring, len(first)) for inc in incs]
        pods = [members[each.index(i)][0] for i in range(len(first))]
        requests = np.stack([pod.request for pod in pods])
        free = state.free[nodes]
        fits = ((free[None, :, :] >= requests[:, None, :]) | (requests[:, None, :] <= 0)).all(axis=2)
        total = np.zeros(fits.shape, dtype=np.int64)
        for plugin, weight in self.local_scorers:
            total += weight * plugin.score_rows(state, pods, nodes)
        if len(pods) < len(members):  # a zone's twin takes its key's rows, then its own static mask
            fits, total = np.take(fits, each, axis=0), np.take(total, each, axis=0)
        fits &= store.static[at]
        store.best[at] = np.where(fits, total, UNFIT)
        before = np.count_nonzero(store.fits[at], axis=1)
        store.fits[at] = fits
        for inc, moved in zip(incs, (np.count_nonzero(fits, axis=1) - before).tolist(), strict=True):
            inc.n_fit += moved
            inc.log_pos = end
        return True

    def _touch(self, pod: CompiledPod) -> None:
        """Mark the pod spec's cache most recently used."""
        key = id(pod)
        self._cached[key] = pod
        self._cached.move_to_end(key)

    def _memo_entry(
        self,
        pod: CompiledPod,
        node: int,
        wanted: list[tuple[int, int]],
        memo: dict[UsageKey, tuple[bool, int]],
        memo_key: UsageKey,
    ) -> tuple[bool, int]:
        """(fits by resources, ``best`` value: the weighted per-node score, UNFIT where it does not fit)
        of the node's usage, remembered for the next node in the same usage."""
        ok, score = self._score_node(pod, node, wanted)
        hit = (ok, score if ok else UNFIT)
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[memo_key] = hit
        return hit

    def _score_node(self, pod: CompiledPod, node: int, wanted: list[tuple[int, int]]) -> tuple[bool, int]:
        """Whether the pod fits ``node`` by its resources, and the node's weighted per-node score."""
        state = self.state
        row = state.free[node].tolist()
        ok = all(row[c] >= amount for c, amount in wanted)
        rows = (
            state.allocatable[node].tolist(),
            state.requested[node].tolist(),
            state.nonzero_requested[node].tolist(),
        )
        total = 0
        for plugin, weight in self.local_scorers:
            score = plugin.score_one(state, pod, rows)
            if score is not None:
                total += weight * score
        return ok, total

    # -- score ---------------------------------------------------------------------------------------
    def score(self, pod: CompiledPod, nodes: IntArray) -> IntArray:
        """Weighted total score per node in ``nodes`` (sum of weight × normalised plugin score)."""
        total = np.zeros(len(nodes), dtype=np.int64)
        for plugin, weight in self.scorers:
            s = plugin.score(self.state, pod, nodes)
            if s is not None:
                total += weight * s
        return total

    def plugin_scores(self, pod: CompiledPod, nodes: IntArray) -> dict[str, IntArray | None]:
        """Each score plugin's normalised scores per node (None where it skipped), for explanations."""
        out: dict[str, IntArray | None] = {}
        for plugin, _ in self.scorers:
            scores = plugin.score(self.state, pod, nodes)
            out[plugin.name] = (
                np.full(len(nodes), scores, dtype=np.int64) if isinstance(scores, int) else scores
            )
        return out

    def select(self, pod: CompiledPod, allowed: BoolArray | None = None) -> int:
        """The node the pod goes to (among ``allowed`` nodes if given), or -1 when none is feasible."""
        if self.dra is not None and pod.spec.claims is not None:
            claimable = self.dra.passes(self.state, pod)
            allowed = claimable if allowed is None else allowed & claimable
        inc = self._incremental(pod)
        if not inc.n_fit:
            return -1  # pod filters and ``allowed`` only ever take nodes away
        by_best = inc.by_best
        if by_best is None:
            by_best = inc.by_best = not (self._global_scorers(pod) or pod.spec.pod_dependent)
        if by_best and allowed is None:
            return self.choose_by_best(inc.best)
        fits = inc.fits & self.pod_filters_pass(pod) if pod.spec.pod_dependent else inc.fits
        nodes = (fits if allowed is None else fits & allowed).nonzero()[0]
        if len(nodes) <= 1:
            return int(nodes[0]) if len(nodes) else -1
        total = inc.best[nodes]  # every node in ``nodes`` fits: its per-node score
        for plugin, weight in self._global_scorers(pod):
            scores = plugin.score(self.state, pod, nodes)
            if scores is not None and not isinstance(scores, int):  # uniform: cannot change the choice
                total = total + weight * scores
        return self._one_of(nodes[total == total.max()])

    def choose_by_best(self, best: IntArray) -> int:
        """The fitting node with the highest per-node score: the first in node order (argmax) with
        ``tie_break: first`` or when alone, else a random draw among the tied."""
        first = best.argmax()
        if self._first_of_ties:
            return int(first)
        return self._one_of((best == best[first]).nonzero()[0])

    def _one_of(self, tied: IntArray) -> int:
        """The tie-break among the best nodes (in node order): the first with ``tie_break: first`` or
        when alone, else a random draw."""
        if len(tied) == 1 or self._first_of_ties:
            return int(tied[0])
        return int(tied[self.rng.integers(len(tied))])

    def caches_near_budget(self) -> bool:
        """The cached pod specs near their budget: a catch-up then marks its spec most recently used."""
        return len(self._cached) * 2 > self._max_cached

    def _global_scorers(self, pod: CompiledPod) -> list[tuple[ScorePlugin, int]]:
        """The global scorers that can change the pod's choice, decided once per pod spec: a plugin that
        skips this pod or scores all nodes alike cannot."""
        scorers: list[tuple[ScorePlugin, int]] | None = pod.cache.get("global_scorers")
        if scorers is None:
            scorers = [(p, w) for p, w in self.global_scorers if not p.uniform_for(self.state, pod)]
            pod.cache["global_scorers"] = scorers
        return scorers

    # -- explain -------------------------------------------------------------------------------------
    def explain(self, pod: CompiledPod) -> FitError:
        """Why no node fits: the first failing filter per ready node, as kube-scheduler reports it."""
        state = self.state
        ready = int(np.count_nonzero(state.ready))
        for plugin in self.filters:
            message = plugin.pre_filter(state, pod)
            if message is not None:
                return FitError(num_nodes=ready, failures=(), pre_filter_msg=message)
        remaining = state.ready.copy()
        failures: list[FilterFailure] = []
        for plugin in self.filters:
            passed = plugin.passes(state, pod)
            failing = remaining & ~passed
            if failing.any():
                failures.append(plugin.failure(state, pod, failing))
            remaining &= passed
        return FitError(num_nodes=int(np.count_nonzero(state.ready)), failures=tuple(failures))

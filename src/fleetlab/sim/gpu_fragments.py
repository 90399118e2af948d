"""GPU fragmentation over time in the FGD paper's terms (Weng et al., USENIX ATC 2023; reference fgd.md §3.3).

Over the plain GPUs of ready nodes (time-sliced and MIG GPUs are left out), with R_{n,g} the unallocated
milli-GPU of GPU g on node n:

* ``idle_gpu_milli`` = Σ R: unallocated GPU capacity;
* ``partial_gpus`` / ``stranded_gpu_milli``: GPUs partly in use, and the free milli on them;
* ``frag_gpu_milli`` = F_N(M) = Σ_n Σ_m p_m · F_n(m) for the *typical pods* M of the workload: the most
  common pod shapes (cpu, whole GPUs, GPU share) covering 95 % of pods, weighted by pod count. F_n(m) is
  all of the node's idle GPU when m cannot run there (its static filters, cpu or not enough GPUs with
  share u_m free — u_m = 1000 for whole-GPU pods) or m uses no plain GPU (CPU-only, MIG, time-sliced
  requests); otherwise it is the idle GPU on GPUs with less than u_m free. Memory is ignored, as in FGD;
  memory-only shares (``gpu-memory``) are not part of M;
* ``frag_rate`` = frag / idle (the paper's "Frag Rate").

Node terms are recomputed only for nodes that a bind or release touched (all nodes when readiness or
cordons change), as one array expression over those nodes × M × GPUs.

Subscribes to ``after_step`` (one sample, the stranded series from the same pass) and ``run_end``.
May change: nothing.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.gpu_share import MILLI_PER_GPU
from fleetlab.placement.framework import PodSpec
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.specs import pod_spec
from fleetlab.sim.step_series import StepSeries

#: Share of pods the typical pod shapes must cover (the FGD experiments' podPopularityThreshold).
POPULARITY = 0.95

#: One timeline sample: t_ms, idle, stranded, partial GPUs, frag (all milli-GPU but the count), allocated.
SAMPLE_WIDTH = 6


#: Distinct node states remembered before the memo starts again (bounds its memory).
MEMO_LIMIT = 65_536

#: One node's (or the cluster's) six terms in ``_node_totals`` column order; all but F_n(M) are whole
#: milli-GPU or GPU counts, exact in float64, so they are kept as ints (their sums are exact either way).
Terms = tuple[int, int, int, float, int, int]
ZERO_TERMS: Terms = (0, 0, 0, 0.0, 0, 0)


def as_terms(row: NDArray[np.float64]) -> Terms:
    """One ``_node_totals`` row as Terms (F_n(M) as the same float, every other column as its int)."""
    idle, stranded_partial, partial, frag, used, stranded = row.tolist()
    return (int(idle), int(stranded_partial), int(partial), frag, int(used), int(stranded))


def difference(a: Terms, b: Terms) -> Terms:
    """``a - b`` element by element."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4], a[5] - b[5])


def plus(a: Terms, b: Terms) -> Terms:
    """``a + b`` element by element."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


def pods_per_spec(sim: EngineHandle) -> dict[PodSpec, int]:
    """Pods per pod spec of the workload (memory-only shares left out), specs in order of first appearance
    in submit order. One ``pod_spec`` per spec key (jobs with equal keys have equal specs), not per job."""
    columns = sim.job_columns
    keys = columns.spec_key
    n_keys = int(keys.max(initial=-1)) + 1
    pods = np.zeros(n_keys, dtype=np.int64)
    np.add.at(pods, keys, columns.pods)
    first = np.full(n_keys, len(keys), dtype=np.int64)
    np.minimum.at(first, keys, np.arange(len(keys), dtype=np.int64))
    counts: dict[PodSpec, int] = {}
    for key in np.argsort(first, kind="stable").tolist():  # keys are numbered by first appearance already
        job = sim.jobs[int(first[key])]
        if job.gpu_memory is not None and job.gpu_milli is None and job.shares_gpu:
            continue
        spec = pod_spec(job)
        counts[spec] = counts.get(spec, 0) + int(pods[key])
    return counts


class FragmentationMeter:
    """Keeps per-node F_n(M) current and appends a sample whenever the totals change."""

    def __init__(self, sim: EngineHandle) -> None:
        self.sim = sim
        counts = pods_per_spec(sim)
        total = sum(counts.values())
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: first appearance breaks ties
        chosen: list[tuple[PodSpec, int]] = []
        covered = 0
        for spec, count in ranked:
            if total and covered >= POPULARITY * total:
                break
            chosen.append((spec, count))
            covered += count
        self.specs = [spec for spec, _ in chosen]
        weight = np.asarray([c for _, c in chosen], dtype=np.float64)
        self.p = weight / weight.sum() if len(weight) else weight
        state = sim.state
        self.cpu = np.asarray([dict(s.requests).get("cpu", 0) for s in self.specs], dtype=np.int64)
        gpu = state.gpu_col
        whole = np.asarray([dict(s.requests).get(state.resource_names[gpu], 0) for s in self.specs])
        share = np.asarray([s.gpu_share[0] for s in self.specs], dtype=np.int64)
        #: Per spec: GPUs needed and the per-GPU share (0 = uses no plain GPU).
        self.count = np.where(share > 0, 1, whole).astype(np.int64)
        self.unit = np.where(share > 0, share, np.where(whole > 0, MILLI_PER_GPU, 0)).astype(np.int64)
        #: Per node the six terms (see _node_totals, as Terms), and their sums over ready nodes:
        #: a touched node's update is the numpy version's ``totals + (new - old)`` done element by element,
        #: the same IEEE operations in the same order, without a numpy call per step.
        #: None for a node not touched since the last full pass: its terms are then that pass's row in
        #: ``_full_pass`` (converted on first touch, so a topology change costs no tuple per node).
        self.terms: list[Terms | None] = [ZERO_TERMS] * state.n
        self._full_pass: NDArray[np.float64] = np.zeros((state.n, 6), dtype=np.float64)
        self.totals: Terms = ZERO_TERMS
        self.eligible = np.zeros((state.n, len(self.specs)), dtype=bool)
        #: The nodes a bind or release touched in this step (the engine's set, cleared after each step).
        self.dirty = sim.touched
        self.generation = -1
        self.rows = StepSeries(SAMPLE_WIDTH)
        #: (t_ms, stranded milli-GPU: the last of the six terms) whenever that total changes.
        self.stranded_rows = StepSeries(2)
        #: A node's terms depend only on its GPU slots' capacity and use, its eligibility per shape and
        #: whether its free CPU covers each shape: few distinct states recur on many nodes, so the terms
        #: of a touched node are looked up by that state (cleared with the eligibility). The state is
        #: keyed as (static class, CPU rank, used milli row): the class numbers the distinct (capacity
        #: row, eligibility row) pairs, fixed until the topology changes; the rank is how many of the
        #: shapes' distinct CPU requests the free CPU covers, which fixes every ``cpu_free >= cpu``.
        self._memo: dict[tuple[int, bytes], Terms] = {}
        self._static_class: list[int] = [0] * state.n
        assert state.devices is not None
        _, cap_class = np.unique(state.devices.milli_cap, axis=0, return_inverse=True)
        #: Per node the class of its GPU slots' capacity row (fixed for the run).
        self._cap_class = np.asarray(cap_class, dtype=np.int64).reshape(-1)
        self._cpu_steps: list[int] = sorted(set(self.cpu.tolist()))
        self._cpu_ranks = len(self._cpu_steps) + 1
        #: The cluster state, Python-int views of its free resources and readiness, and the GPUs' used
        #: milli, read once per touched node (the arrays are never replaced).
        self._state = state
        self._free = state.free.data
        self._ready = state.ready.data
        self._cpu_col = state.cpu_col
        self._used = state.devices.milli_used
        #: No node has a GPU of any kind (a CPU-only cluster; slots are fixed for the run): every term of
        #: every node is zero, so a touched node needs no update.
        devices = state.devices
        self._no_gpu_slots = not (devices.milli_cap.any() or devices.replica_cap.any() or devices.mig_slots)
        sim.on.after_step.append(self.sample)
        sim.on.run_end.append(self.finish)

    def finish(self, parts: ResultParts) -> None:
        """The fragmentation samples of the run."""
        parts.fragmentation = self.rows.close()

    def _refresh_eligibility(self) -> None:
        scheduler = self.sim.scheduler
        for j, spec in enumerate(self.specs):
            self.eligible[:, j] = scheduler.static_mask(scheduler.compile(spec))
        uses_devices = np.asarray(
            [
                any(k.startswith("nvidia.com/") and k != "nvidia.com/gpu" for k, _ in s.requests)
                for s in self.specs
            ],
            dtype=bool,
        )
        self.unit = np.where(uses_devices, 0, self.unit)
        self._memo.clear()
        self._static_class = self._static_classes()

    def _static_classes(self) -> list[int]:
        """Per node a number that differs exactly when its (capacity row, eligibility row) differ: the
        capacity row's class (fixed for the run) then the eligibility bits, so a topology change costs
        a matrix-vector product, not a sort of rows (which only very many shapes fall back to)."""
        shapes = len(self.specs)
        cap_classes = int(self._cap_class.max(initial=0)) + 1
        if shapes + cap_classes.bit_length() > 62:
            static = np.concatenate((self._cap_class[:, None], self.eligible.astype(np.int64)), axis=1)
            _, inverse = np.unique(static, axis=0, return_inverse=True)
            return np.asarray(inverse).reshape(-1).tolist()
        bits = self.eligible.astype(np.int64) @ (np.int64(1) << np.arange(shapes, dtype=np.int64))
        classes: list[int] = ((self._cap_class << shapes) | bits).tolist()
        return classes

    def _terms_of(self, node: int) -> Terms:
        """One touched node's terms, looked up by its state in the memo (computed on a miss)."""
        cpu_rank = bisect_right(self._cpu_steps, self._free[node, self._cpu_col])
        key = (self._static_class[node] * self._cpu_ranks + cpu_rank, self._used[node].tobytes())
        terms = self._memo.get(key)
        if terms is None:
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            terms = self._memo[key] = as_terms(self._node_totals(np.asarray([node], dtype=np.int64))[0])
        return terms

    def _node_totals(self, rows: NDArray[np.int64]) -> NDArray[np.float64]:
        """Per node: idle, stranded-in-partial, partial GPUs, F_n(M), allocated and stranded (free share no
        typical shape can use, see sim/stranded.py) — the sample's terms before summing, in one pass."""
        state = self.sim.state
        devices = state.devices
        assert devices is not None
        cap = devices.milli_cap[rows]
        used = devices.milli_used[rows]
        free = cap - used  # (k, G); 0 on slots that are not plain GPUs
        partial = (used > 0) & (used < cap)
        out = np.empty((len(rows), 6), dtype=np.float64)
        idle = free.sum(axis=1)
        out[:, 0] = idle
        out[:, 1] = np.where(partial, free, 0).sum(axis=1)
        out[:, 2] = partial.sum(axis=1)
        out[:, 4] = used.sum(axis=1)
        if not len(self.specs):
            out[:, 3] = 0.0
            out[:, 5] = idle
            return out
        unit = self.unit[None, :, None]
        enough = free[:, None, :] >= np.where(unit > 0, unit, MILLI_PER_GPU)  # (k, M, G)
        cpu_free = state.free[rows, state.cpu_col]
        can = (
            self.eligible[rows]
            & (cpu_free[:, None] >= self.cpu[None, :])
            & (enough.sum(axis=2) >= np.maximum(self.count, 1)[None, :])
            & (self.unit[None, :] > 0)
        )
        # F_n(M): per shape, the free share too small for it where it could run, else all that is free.
        small = np.where(enough, 0, free[:, None, :]).sum(axis=2).astype(np.float64)
        out[:, 3] = np.where(can, small, idle[:, None].astype(np.float64)) @ self.p
        usable = (can[:, :, None] & enough & (cap[:, None, :] > 0)).any(axis=1)
        out[:, 5] = np.where(usable, 0, free).sum(axis=1)
        return out

    def _rebuild(self) -> None:
        """Every node anew (readiness, cordons or membership changed): one array pass."""
        state = self.sim.state
        self.generation = state.topology_generation
        self._refresh_eligibility()
        terms = self._node_totals(np.arange(state.n, dtype=np.int64))
        self.totals = as_terms(terms[state.ready].sum(axis=0))
        self._full_pass = terms
        self.terms = [None] * state.n

    def node_terms(self, node: int) -> Terms:
        """The node's current terms."""
        terms = self.terms[node]
        return terms if terms is not None else as_terms(self._full_pass[node])

    def sample(self, now: int) -> None:
        """Bring the changed nodes' terms up to date and record the totals and the stranded total; nothing
        to do when no node was touched since the last sample (the totals are unchanged)."""
        if self._state.topology_generation != self.generation:
            self._rebuild()
        elif self.dirty and self._no_gpu_slots:
            pass  # every term stays zero; the step is still recorded, as below
        elif self.dirty:
            # As numpy's ``(new - old)[ready].sum(axis=0)`` over the sorted rows: a left fold, row by row
            # (one node, the common step: one bind or release, needs no sort).
            dirty = self.dirty
            change: Terms | None = None
            for node in sorted(dirty) if len(dirty) > 1 else dirty:
                new = self._terms_of(node)
                old = self.node_terms(node)
                self.terms[node] = new
                if self._ready[node]:
                    delta = difference(new, old)
                    change = delta if change is None else plus(change, delta)
            if change is not None:
                self.totals = plus(self.totals, change)
        elif self.rows:
            return
        idle, stranded, partial, frag, used, stranded_all = self.totals
        self.rows.record(now, (idle, stranded, partial, round(frag), used))
        self.stranded_rows.record(now, (stranded_all,))  # the series keeps a row only when it changed

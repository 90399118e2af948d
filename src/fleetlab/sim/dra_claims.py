"""Dynamic Resource Allocation in the run: pods get devices through their ResourceClaims, as kube-scheduler's
DynamicResources plugin and the resourceclaim controller hand them out (Kubernetes v1.35).

At the start the scenario's DeviceClasses, ResourceClaims, ResourceClaimTemplates and ResourceSlices —
plus, for every node of a pool under ``dra.nvidiaDriver``, the slices NVIDIA's GPU DRA driver publishes
and its two DeviceClasses — form one :class:`~fleetlab.placement.dra.state.DraState`, and the plugin is
attached to every scheduler as its last filter. A job's pods share one claims *shape*
(``PodSpec.claims``); when a pod is bound its template entries become claims of its own
(``<job>-<k>-<entry>``) and take the devices Filter found on that node, shared claims are reserved for it
too (allocated once, by the first pod). When the pod stops holding its node (finished, evicted, failed)
its reservations go, a claim nobody reserves is deallocated and the pod's own claims are deleted.

GPU accounting: a whole GPU the NVIDIA driver hands out (device ``type`` ``gpu``), or the GPU a MIG
partition is carved from, counts as an allocated ``nvidia.com/gpu`` of its node while any claim holds it
(the cluster's GPU totals, the fragmentation meters and device-plugin pods see it taken, so one GPU is
never given out twice), and a pod's own claims' whole GPUs count in its job's ``gpus_per_pod``, so
GPU-hours and cost split count them as they count device-plugin GPUs; busy GPUs count them while the pod
computes. Devices of shared claims belong to no one pod: they count on their node, not in a job's GPUs.

Subscribes to ``bind``, ``start``, ``release`` and ``run_end`` (and adds a pending-table note).
May change: the DRA state (claims, allocations, reservations), the ``nvidia.com/gpu`` column, GPU devices
and GPU counters of DRA-held GPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from fleetlab.model.dra import DeviceClass, DraObjects, PodClaims, ResourceSlice
from fleetlab.placement.devices import Holding
from fleetlab.placement.dra.allocator import DeviceID
from fleetlab.placement.dra.pools import NodeView
from fleetlab.placement.dra.state import DraState, pod_instance
from fleetlab.placement.dra.verdict import dra_block
from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.plugins.dynamic_resources import DynamicResources
from fleetlab.placement.scheduler import Scheduler
from fleetlab.sim.book import scenario_positions
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.result import DraTable, PendingJob
from fleetlab.sim.usage_meter import UsageMeter
from fleetlab.spec.nvidia_dra import DRIVER, device_classes, node_slices

#: NVIDIA driver device names: ``gpu-<minor>`` and ``gpu-<minor>-mig-<profile>-<start>-<size>``.
_GPU_NAME = re.compile(r"^gpu-(\d+)(-mig-.*)?$")


def uses_dra(sim: EngineHandle) -> bool:
    """Whether the scenario has a ``dra:`` section with anything in it."""
    dra = sim.resolved.scenario.dra
    return dra is not None and bool(dra.objects or dra.nvidia_driver)


def scenario_dra_objects(sim: EngineHandle) -> DraObjects:
    """The scenario's objects plus what the NVIDIA driver publishes on its pools' node slots (its chart's
    DeviceClasses unless the scenario defines classes of those names)."""
    dra = sim.resolved.scenario.dra
    assert dra is not None
    objects = dra.dra_objects()
    slices: list[ResourceSlice] = list(objects.slices)
    classes: list[DeviceClass] = list(objects.classes)
    if dra.nvidia_driver:
        names = {c.name for c in classes}
        classes += [c for c in device_classes() if c.name not in names]
        by_pool = {p.pool: p for p in dra.nvidia_driver}
        for info in sim.node_infos:
            pool = sim.pools[info.pool]
            driver = by_pool.get(pool.name)
            if driver is None or pool.gpu_model is None:
                continue
            slices += node_slices(
                info.name,
                pool.gpu_model,
                pool.gpus_per_node,
                driver.partitionable,
                driver.driver_version,
                driver.cuda_version,
            )
    return DraObjects(tuple(classes), objects.claims, objects.templates, tuple(slices))


@dataclass
class _Held:
    """A claim that holds devices: the node it was allocated on, the GPUs it occupies there (minors), how
    many devices, since when, and the pods reserving it."""

    node: int
    gpus: tuple[int, ...]
    devices: int
    since_ms: int
    pods: set[int]


class DraClaims:
    """Builds the DRA state and plugin of a run, and reserves and frees claims as pods bind and release."""

    def __init__(self, sim: EngineHandle, usage: UsageMeter) -> None:
        self.sim = sim
        self.usage = usage
        objects = scenario_dra_objects(sim)
        self.objects = objects
        self.state = DraState.from_objects(objects)
        nodes = [NodeView(info.name, dict(info.labels)) for info in sim.node_infos]
        self.plugin = DynamicResources(self.state, nodes)
        for scheduler in sim.schedulers.values():
            scheduler.attach_dynamic_resources(self.plugin)
        node_of = {info.name: i for i, info in enumerate(sim.node_infos)}
        #: Per NVIDIA-driver device: (node, GPU minor, whole GPU?) for the GPU column; devices per node.
        self.gpu_of: dict[DeviceID, tuple[int, int, bool]] = {}
        self.node_devices = np.zeros(sim.state.n, dtype=np.int64)
        for s in objects.slices:
            node = node_of.get(s.spec.node_name or "", -1)
            for device in s.spec.devices:
                if node >= 0:
                    self.node_devices[node] += 1
                match = _GPU_NAME.match(device.name)
                if node >= 0 and s.spec.driver == DRIVER and match is not None:
                    device_id = DeviceID(s.spec.driver, s.spec.pool.name, device.name)
                    self.gpu_of[device_id] = (node, int(match.group(1)), match.group(2) is None)
        n_pods = sim.book.n_pods
        self.instances: dict[int, PodClaims] = {}
        self.held: dict[str, _Held] = {}
        #: Per (node, minor) how many claims hold part of the GPU, and the device holding that marks it.
        self.gpu_users: dict[tuple[int, int], tuple[int, Holding | None]] = {}
        self.pod_gpus = np.zeros(n_pods, dtype=np.int64)
        #: Per job (submit order) the most whole GPUs one of its pods' own claims held.
        self.job_gpus = np.zeros(len(sim.job_table), dtype=np.int64)
        self.pod_devices: list[str] = [""] * n_pods
        self.node_device_ms = np.zeros(sim.state.n, dtype=np.int64)
        on = sim.on
        on.bind.append(self.bound)
        on.start.append(self.started)
        on.release.append(self.released)
        on.run_end.append(self.finish)

    # -- bind / release -----------------------------------------------------------------------------
    def bound(self, pod: int, node: int, compiled: CompiledPod, whole_gpus: int) -> None:
        """Create the pod's claims and reserve them with the devices Filter found on ``node``."""
        shape = compiled.spec.claims
        if shape is None:
            return
        sim = self.sim
        book = sim.book
        job = book.job_at[pod]
        name = f"{sim.job_table.ids[job].as_py()}-{pod - int(book.first_pod[job])}"
        instance = pod_instance(shape, name, name)
        self.plugin.reserve(compiled, node, instance)
        self.instances[pod] = instance
        own_gpus = 0
        devices: list[str] = []
        for ref in instance.refs:
            if ref.claim_name is None:
                continue
            key = f"{instance.namespace}/{ref.claim_name}"
            claim = self.state.claims[key]
            assert claim.status.allocation is not None
            results = [r for r in claim.status.allocation.devices.results if not r.admin_access]
            devices += [f"{r.driver}/{r.pool}/{r.device}" for r in claim.status.allocation.devices.results]
            held = self.held.get(key)
            if held is None:
                ids = [DeviceID(r.driver, r.pool, r.device) for r in results]
                gpus = tuple(sorted({self.gpu_of[d][1] for d in ids if d in self.gpu_of}))
                held = self.held[key] = _Held(node, gpus, len(ids), sim.now, set())
                for gpu in gpus:
                    self._hold_gpu(node, gpu, 1)
                if ref.template_name is not None:
                    own_gpus += sum(1 for d in ids if self.gpu_of.get(d, (0, 0, False))[2])
            held.pods.add(pod)
        self.pod_gpus[pod] = own_gpus
        self.pod_devices[pod] = ";".join(devices)
        if own_gpus > self.job_gpus[job]:
            self.job_gpus[job] = own_gpus

    def started(self, pod: int, wall_ms: int) -> None:
        """A pod computing on DRA GPUs keeps them busy."""
        gpus = int(self.pod_gpus[pod])
        if gpus:
            self.usage.add_devices(pod, gpus)

    def released(self, pod: int, node: int) -> None:
        """The pod's reservations go; claims nobody holds any more are deallocated and free their GPUs."""
        instance = self.instances.pop(pod, None)
        if instance is None:
            return
        compiled = self.sim.compiled[self.sim.spec_of(self.sim.book.job_at[pod])]
        self.plugin.release(compiled, instance)
        self.pod_gpus[pod] = 0
        now = self.sim.now
        for ref in instance.refs:
            if ref.claim_name is None:
                continue
            key = f"{instance.namespace}/{ref.claim_name}"
            held = self.held.get(key)
            if held is None:
                continue
            held.pods.discard(pod)
            claim = self.state.claims.get(key)
            if claim is not None and claim.status.allocation is not None:
                continue  # still reserved by another pod
            del self.held[key]
            self.node_device_ms[held.node] += held.devices * (now - held.since_ms)
            for gpu in held.gpus:
                self._hold_gpu(held.node, gpu, -1)

    def _hold_gpu(self, node: int, gpu: int, sign: int) -> None:
        """A claim starts (1) or stops (-1) holding part of GPU ``gpu``: the first holder takes it out of
        the node's ``nvidia.com/gpu`` and GPU devices, the last one gives it back."""
        sim = self.sim
        state = sim.state
        count, holding = self.gpu_users.get((node, gpu), (0, None))
        count += sign
        col = state.gpu_col
        if sign > 0 and count == 1:
            devices = state.devices
            holding = devices.take_gpu(node, gpu) if devices is not None else None
            state.requested[node, col] += 1
            state.free[node, col] -= 1
            sim.counters.gpus_taken(1, state.requested[node, col] == 1)
        elif sign < 0 and count == 0:
            if holding is not None and state.devices is not None:
                state.devices.release(node, holding)
            state.requested[node, col] -= 1
            state.free[node, col] += 1
            sim.counters.gpus_returned(1, state.requested[node, col] == 0)
            holding = None
        if count:
            self.gpu_users[(node, gpu)] = (count, holding)
        else:
            self.gpu_users.pop((node, gpu), None)

    # -- results -------------------------------------------------------------------------------------
    def finish(self, parts: ResultParts) -> None:
        """What the claims held, and a note on pending jobs whose claims keep them waiting."""
        sim = self.sim
        device_ms = self.node_device_ms.copy()
        for held in self.held.values():
            device_ms[held.node] += held.devices * max(parts.end_ms - held.since_ms, 0)
        parts.dra = DraTable(
            job_gpus=self.job_gpus[scenario_positions(sim.order)],
            pod_devices=list(self.pod_devices),
            node_devices=self.node_devices.copy(),
            node_device_ms=device_ms,
        )
        parts.pending_notes.append(self.explain_pending)

    def explain_pending(self, pending: list[PendingJob]) -> list[PendingJob]:
        """A job kube-scheduler keeps pending because of its claims is blocked by ``dra``, with the plugin's
        reasons and the devices each request finds (the same verdict ``diagnose`` gives)."""
        claimed = self._claimed_jobs()
        out: list[PendingJob] = []
        for entry in pending:
            job = claimed.get(entry.job_id)
            verdict = None if job is None or entry.blocked_by == "quota" else self._verdict(job)
            out.append(entry if verdict is None else replace(entry, blocked_by=verdict[0], detail=verdict[1]))
        return out

    def _claimed_jobs(self) -> dict[str, int]:
        sim = self.sim
        templates = sim.job_table.templates
        with_claims = [i for i, t in enumerate(templates) if t.resource_claims]
        if not with_claims:
            return {}
        rows = np.flatnonzero(np.isin(sim.job_table.column("template"), with_claims)).tolist()
        return {sim.job_table.ids[i].as_py(): i for i in rows}

    def _verdict(self, job: int) -> tuple[str, str] | None:
        sim = self.sim
        sid = sim.spec_of(job)
        compiled = sim.compiled[sid]
        scheduler = sim.schedulers[sim.spec_profile[sid]]
        return dra_block(scheduler, compiled, _first_failing(scheduler, compiled))


def _first_failing(scheduler: Scheduler, pod: CompiledPod) -> list[str | None]:
    """Per node: "DynamicResources" where every other filter passes and the claims do not fit, else None."""
    assert scheduler.dra is not None
    state = scheduler.state
    cols = pod.request_cols
    others = scheduler.static_mask(pod) & (state.free[:, cols] >= pod.request[cols]).all(axis=1)
    if pod.spec.pod_dependent:
        others &= scheduler.pod_filters_pass(pod)
    blocked = others & ~scheduler.dra.passes(state, pod)
    name = scheduler.dra.name
    return [name if b else None for b in blocked.tolist()]

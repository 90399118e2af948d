"""Inference services in the event loop: every evaluation step, count each service's ready replicas and
how fast each serves on the GPU it holds now, read the request rate and (when it autoscales) let the HPA
set its replica count.

Replicas are the slot jobs of sim/service_replicas.py, placed, evicted and requeued by the simulator
like any pod. A replica is *ready* while its pod is running (bound and past its image pull and data
download). Slots beyond the current replica count are inactive: their pods are taken out of the
scheduling queue, or off their node, as a ReplicaSet deletes pods when it is scaled down — pending pods
first, then pods not yet running, then the newest running ones. The latency of each sample is computed
afterwards from the recorded (rps, servers, rate) columns (metrics/services.py), all at once. On a cluster
whose GPUs can be shared (time-slicing, MPS, MIG, GPU shares) each ready replica's throughput is scaled by
its speed now (sim/replica_speed.py: co-tenants on its GPU slow it, an MPS client or a MIG instance gets
its part), so the per-server rate, and with it latency and SLO attainment, moves with co-tenancy.

Subscribes to ``next_time`` and ``tick`` (evaluation ticks) and ``run_end``; built only with services.
May change: queues replica pods (``enqueue``) and deletes those scaled away (``delete_pod``).
"""

from __future__ import annotations

import heapq

import numpy as np

from fleetlab.model.service import ReplicaPerformance, Service
from fleetlab.services.hpa import HpaState, desired_replicas
from fleetlab.services.rates import rate_at
from fleetlab.sim.events import to_ms
from fleetlab.sim.gpu_tenancy import GpuTenancy
from fleetlab.sim.handle import EngineHandle, ResultParts
from fleetlab.sim.replica_speed import ReplicaSpeeds, shares_gpus
from fleetlab.sim.service_record import ServiceRecord, ServiceSamples
from fleetlab.sim.service_replicas import replica_job_id


class _Unit:
    """One service's slots, HPA state and samples."""

    def __init__(self, sim: EngineHandle, service: Service, by_id: dict[str, int]) -> None:
        self.service = service
        self.jobs = [by_id[replica_job_id(service.name, k)] for k in range(service.replicas.upper)]
        self.pods = np.asarray([int(sim.book.first_pod[j]) for j in self.jobs], dtype=np.int64)
        self.active = np.ones(len(self.jobs), dtype=bool)
        self.started = False
        self.step_ms = max(1, to_ms(service.evaluation_step_s))
        scaling = service.autoscaling
        self.hpa = (
            HpaState(to_ms(scaling.scale_up_stabilization_s), to_ms(scaling.scale_down_stabilization_s))
            if scaling is not None
            else None
        )
        self.perf: dict[str | None, ReplicaPerformance | None] = {}
        #: (t, ready, desired, servers, rate, rps, mean speed of the serving replicas).
        self.samples: list[tuple[int, int, int, int, float, float, float]] = []
        self.unlisted: set[str] = set()

    def perf_on(self, model: str | None) -> ReplicaPerformance | None:
        if model not in self.perf:
            self.perf[model] = self.service.perf_on(model)
        return self.perf[model]


class ServiceController:
    """Evaluation ticks of every service, merged into the event loop's clock."""

    def __init__(self, sim: EngineHandle, tenancy: GpuTenancy) -> None:
        self.sim = sim
        #: Replica speeds under sharing; None on a cluster where no replica can share a GPU.
        self.speeds = ReplicaSpeeds(sim, tenancy) if shares_gpus(sim) else None
        scenario = sim.resolved.scenario
        assert scenario.horizon_s is not None
        self.horizon_ms = to_ms(scenario.horizon_s)
        by_id = {job.id: i for i, job in enumerate(sim.jobs)}
        self.units = [_Unit(sim, s, by_id) for s in scenario.services]
        self.ticks: list[tuple[int, int]] = [(to_ms(u.service.start_s), i) for i, u in enumerate(self.units)]
        heapq.heapify(self.ticks)
        on = sim.on
        on.next_time.append(self.next_time)
        on.tick.append(self.step)
        on.run_end.append(self.finish)

    def next_time(self, t: int | None, t_job: int | None) -> int | None:
        """The loop's next time with the next evaluation tick merged in."""
        if not self.ticks:
            return t
        tick = self.ticks[0][0]
        return tick if t is None else min(t, tick)

    def step(self, now: int) -> None:
        """Evaluate every service whose tick is due (before this step's scheduling cycle)."""
        while self.ticks and self.ticks[0][0] == now:
            _, index = heapq.heappop(self.ticks)
            unit = self.units[index]
            self._evaluate(unit, now)
            if now + unit.step_ms <= self.horizon_ms:
                heapq.heappush(self.ticks, (now + unit.step_ms, index))

    def _evaluate(self, unit: _Unit, now: int) -> None:
        if not unit.started:
            unit.started = True
            self._scale(unit, unit.service.replicas.min)
        book, state = self.sim.book, self.sim.state
        pods = unit.pods
        running = unit.active & (book.node[pods] >= 0) & (book.start_ms[pods] >= 0) & (book.end_ms[pods] < 0)
        servers, throughput, speed_sum, serving = 0, 0.0, 0.0, 0
        speeds = self.speeds
        for pod in pods[running].tolist():
            model = state.gpu_model[int(book.node[pod])]
            perf = unit.perf_on(model)
            if perf is None:
                unit.unlisted.add(model or "CPU-only")
                continue
            servers += perf.servers()
            speed = 1.0 if speeds is None else speeds.speed(pod)
            throughput += perf.throughput_rps * speed
            speed_sum += speed
            serving += 1
        rps = float(rate_at(unit.service.rate, now / 1000.0))
        ready = int(np.count_nonzero(running))
        scaling = unit.service.autoscaling
        if scaling is not None and unit.hpa is not None:
            current = int(np.count_nonzero(unit.active))
            utilization = rps / throughput if throughput > 0 else 0.0
            bounds = (unit.service.replicas.min, unit.service.replicas.upper)
            desired = desired_replicas(
                unit.hpa,
                now,
                current,
                ready,
                utilization,
                scaling.target_utilization,
                scaling.tolerance,
                bounds,
            )
            self._scale(unit, desired)
        rate = throughput / servers if servers else 1.0
        speed_mean = speed_sum / serving if serving else float("nan")  # no replica serves
        unit.samples.append((now, ready, int(np.count_nonzero(unit.active)), servers, rate, rps, speed_mean))

    def _scale(self, unit: _Unit, target: int) -> None:
        current = int(np.count_nonzero(unit.active))
        if target > current:
            for slot in np.flatnonzero(~unit.active)[: target - current].tolist():
                unit.active[slot] = True
                self.sim.book.start_pending(int(unit.pods[slot]), self.sim.now)
                self.sim.enqueue(unit.jobs[slot])
        elif target < current:
            book = self.sim.book
            slots = np.flatnonzero(unit.active).tolist()

            def rank(slot: int) -> tuple[int, int, int]:
                pod = int(unit.pods[slot])
                stage = 0 if book.node[pod] < 0 else (1 if book.start_ms[pod] < 0 else 2)
                return (stage, -int(book.start_ms[pod]), -slot)

            for slot in sorted(slots, key=rank)[: current - target]:
                unit.active[slot] = False
                self._delete(unit, slot)

    def _delete(self, unit: _Unit, slot: int) -> None:
        """Take a replica's pod off its node (not an eviction: nothing is requeued) or out of the queue."""
        self.sim.delete_pod(int(unit.pods[slot]))

    def finish(self, parts: ResultParts) -> None:
        """The samples of every service, as columns."""
        parts.services = self.record()

    def record(self) -> ServiceRecord:
        """The samples of every service, as columns."""
        out = ServiceRecord()
        for unit in self.units:
            rows = np.asarray(unit.samples, dtype=np.float64).reshape(-1, 7)
            out.services.append(
                ServiceSamples(
                    spec=unit.service,
                    t_ms=rows[:, 0].astype(np.int64),
                    ready=rows[:, 1].astype(np.int64),
                    desired=rows[:, 2].astype(np.int64),
                    servers=rows[:, 3].astype(np.int64),
                    server_rate=rows[:, 4].copy(),
                    rps=rows[:, 5].copy(),
                    pods=unit.pods.copy(),
                    speed=None if self.speeds is None else rows[:, 6].copy(),
                )
            )
            if unit.unlisted:
                out.warnings.append(
                    f"service {unit.service.name}: replicas ran on {', '.join(sorted(unit.unlisted))}, which "
                    "its performance section does not list (nor 'default'); they served no requests"
                )
        return out

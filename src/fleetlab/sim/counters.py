"""Small value types the simulator keeps per run: its scheduling-queue groups and its cluster counters."""

from __future__ import annotations

from dataclasses import dataclass

from fleetlab.placement.gang import TopologyRequest

NO_TOPOLOGY = TopologyRequest()


@dataclass(frozen=True)
class Group:
    """A scheduling-queue group: pods of one spec, or one gang (all pods of a job placed at once)."""

    spec_id: int
    gang_size: int = 0
    topology: TopologyRequest = NO_TOPOLOGY


@dataclass
class Counters:
    """Cluster totals kept incrementally for the timeline."""

    allocated_gpus: int = 0
    total_gpus: int = 0
    whole_free: int = 0
    gpu_nodes: int = 0

    def gpus_taken(self, gpus: int, node_had_none: bool) -> None:
        """``gpus`` GPUs of a ready node were allocated; a node that had none is no longer whole free."""
        self.allocated_gpus += gpus
        if node_had_none:
            self.whole_free -= 1

    def gpus_returned(self, gpus: int, node_has_none: bool) -> None:
        """``gpus`` GPUs of a ready node were freed; a node left with none allocated is whole free again."""
        self.allocated_gpus -= gpus
        if node_has_none:
            self.whole_free += 1

    def node_counted(self, gpus: int, idle: bool, sign: int) -> None:
        """A GPU node joins (``sign`` 1) or leaves (-1) the ready totals; ``idle``: no GPU allocated."""
        self.total_gpus += sign * gpus
        self.gpu_nodes += sign
        if idle:
            self.whole_free += sign

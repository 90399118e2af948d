"""ImageLocality: prefer nodes that already hold the pod's image, scaled by how widely it is spread.

Upstream: pkg/scheduler/framework/plugins/imagelocality/image_locality.go (thresholds 23 MiB and
1000 MiB per container; the image size is scaled by the fraction of nodes holding it).
"""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import CompiledPod, ScorePlugin
from fleetlab.placement.scoring import MAX_NODE_SCORE
from fleetlab.placement.state import ClusterState, IntArray

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class ImageLocalityScore(ScorePlugin):
    """100 × (clamp(size × spread) − 23 MiB) / (1000 MiB × containers − 23 MiB) on nodes with the image."""

    name = "ImageLocality"

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | int | None:
        image = pod.spec.image
        present = state.images.get(image) if image else None
        if present is None:
            return 0  # no node holds the image: every node scores 0
        total = state.ready_count
        spread = state.image_nodes[image] / total if total else 0.0  # type: ignore[index]
        scaled = int(float(pod.spec.image_size) * spread)
        max_threshold = MAX_CONTAINER_THRESHOLD * pod.spec.containers
        clamped = min(max(scaled, MIN_THRESHOLD), max_threshold)
        value = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        return np.where(present[nodes], value, 0).astype(np.int64)

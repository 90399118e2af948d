"""SharePolicy: the FGD paper's placement policies (FGD, BestFit, DotProd, GpuPacking, GpuClustering,
Random) as one Score plugin of the main scheduler, over the nodes that passed every filter.

Scores come from :mod:`fleetlab.placement.share_policies` on the cluster's :class:`ShareView`
(``ClusterState.share_view``, read through the ``SharePolicyView`` protocol), clipped to 0..100 integers;
nodes the policy's own view rules out score 0.
FGD's per-node scores are cached per pod shape and recomputed only for nodes bound or released since.
"""

from __future__ import annotations

import numpy as np

from fleetlab.placement.framework import CompiledPod, ScorePlugin
from fleetlab.placement.share_policies import node_scores
from fleetlab.placement.share_view import share_request
from fleetlab.placement.state import ClusterState, IntArray


class SharePolicyScore(ScorePlugin):
    """Normalised 0..100 score of one FGD-paper policy (normalised across nodes for BestFit)."""

    name = "SharePolicy"

    def __init__(self, policy: str) -> None:
        self.policy = policy

    def score(self, state: ClusterState, pod: CompiledPod, nodes: IntArray) -> IntArray | int | None:
        view = state.share_view
        if view is None or len(nodes) == 0:
            return None
        share = view.sync()
        raw = node_scores(share, share_request(state, pod), self.policy, nodes, view.rng)
        return np.clip(np.where(np.isfinite(raw), raw, 0.0), 0, 100).astype(np.int64)

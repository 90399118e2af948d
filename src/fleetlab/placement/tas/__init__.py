"""Kueue topology-aware scheduling (TAS): a flavor's domain tree and the assignment of PodSets to it."""

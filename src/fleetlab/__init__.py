"""fleetlab: replay GPU workloads against a model of a Kubernetes cluster, one policy change at a time."""

__version__ = "0.1.0"

"""fleetlab: replay GPU workloads against a model of a Kubernetes cluster, one policy change at a time."""

from fleetlab.compiled import choose as _choose_admission_build

__version__ = "0.1.0"

_choose_admission_build()  # compiled admission where the install built it, else its sources (compiled.py)

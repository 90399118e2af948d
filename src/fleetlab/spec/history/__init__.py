"""Importers that turn a real cluster's records (kubectl JSON, Prometheus, Slurm, bills, public traces) into
a :class:`fleetlab.model.history.History`."""

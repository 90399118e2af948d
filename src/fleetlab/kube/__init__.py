"""The Kubernetes bridge: diagnose a cluster snapshot with fleetlab's own placement code."""

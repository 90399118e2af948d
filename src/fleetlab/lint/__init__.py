"""``fleetlab lint``: GPU request mistakes in Kubernetes manifests, by Kubernetes' own rules."""

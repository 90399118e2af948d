"""``fleetlab export``: a scenario's policy written out as the configuration a real cluster reads."""

"""Online inference services: queueing formulas and request-rate curves (pure, no simulator imports)."""

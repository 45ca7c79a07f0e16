"""What the engine's numbers become for a reader: derivations and crossovers as text, JSON and LaTeX, comparisons between chips, the sharding cases of a matmul and their simulation."""

"""The engine: pure SymPy derivations (no I/O, no printing, no catalog access)."""

"""Sweeps (rising rates on one engine) and the capacity read from them."""

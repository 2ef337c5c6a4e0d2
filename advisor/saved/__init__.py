"""Saved runs and the saving itself: the store, atomic writes, redaction."""

"""Does an engine compute the same function: `advisor verify` and quality drift on a text."""

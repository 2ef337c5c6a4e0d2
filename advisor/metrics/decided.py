"""A measured value beside its limit, at the precision that decided the comparison.

"p95 TPOT 1 ms > 1 ms limit" (0.87 against 0.8, both rounded) tells a reader nothing; each figure is
shown with the fewest decimals at which the two differ in the direction that was judged.
"""

from __future__ import annotations


def decided(value: float, limit: float, max_decimals: int = 6) -> tuple[str, str]:
    """(value, limit) as text, with the fewest decimals (0 up) at which they differ the way they compare."""
    if value == limit:
        return f"{value:g}", f"{limit:g}"
    for d in range(max_decimals + 1):
        a, b = f"{value:.{d}f}", f"{limit:.{d}f}"
        if a != b and (float(a) > float(b)) == (value > limit):
            return a, b
    return repr(value), repr(limit)

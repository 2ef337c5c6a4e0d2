"""The one exception a user sees from scenarios: a bad file, name, trace or override.

Messages are one line that names the problem and the fix.
"""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario, trace or override cannot be used; the message says why and how to fix it."""

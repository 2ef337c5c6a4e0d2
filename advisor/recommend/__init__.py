"""The recommender: saved runs + constraints -> ranked, explained deployments (engine x hardware x config).

See `recommendation.recommend`; the pieces are candidates (measured / estimated),
ranking (costs, constraint checks, order), pareto, hosted (break-even) and explain.
"""

from __future__ import annotations

from advisor.recommend.constraints import Constraints, ConstraintsError
from advisor.recommend.recommendation import NoRunsError, Recommendation, recommend

__all__ = ["Constraints", "ConstraintsError", "NoRunsError", "Recommendation", "recommend"]

"""Which field of a log row holds what: the roles a fit reads, their usual names, and `--field` overrides.

A role is one fact about a request (`time` of arrival, `input` and `output`
token counts, and optional `session`, `model`, `end`, `latency_s`,
`latency_ms`, `prefix` block hashes, `cached` prompt tokens). JSONL fields
are dotted paths into nested objects (`usage.prompt_tokens`); CSV columns
match their names ignoring case, spaces, `_` and `-`. The first usual name
found wins; `--field ROLE=NAME` replaces the list for that role. Text
fields (prompts, completions) have no role, so they are never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from scenarios.errors import ScenarioError

Role = Literal["time", "input", "output", "session", "model", "end", "latency_s", "latency_ms", "prefix", "cached"]
ROLES: tuple[Role, ...] = ("time", "input", "output", "session", "model", "end", "latency_s", "latency_ms",
                           "prefix", "cached")
REQUIRED: tuple[Role, ...] = ("time", "input", "output")

# JSONL: OpenAI-style usage (chat completions and responses APIs), LiteLLM's logging payload, Mooncake
JSON_NAMES: dict[Role, tuple[str, ...]] = {
    "time": ("timestamp", "startTime", "start_time", "request_time", "created", "created_at", "time", "ts"),
    "input": ("usage.prompt_tokens", "usage.input_tokens", "prompt_tokens", "input_tokens", "input_length",
              "response.usage.prompt_tokens", "response.usage.input_tokens"),
    "output": ("usage.completion_tokens", "usage.output_tokens", "completion_tokens", "output_tokens",
               "output_length", "response.usage.completion_tokens", "response.usage.output_tokens"),
    "session": ("session_id", "conversation_id", "thread_id", "metadata.session_id", "metadata.conversation_id"),
    "model": ("model", "model_name"),
    "end": ("endTime", "end_time", "completed_at"),
    "latency_s": ("latency_s", "duration_s", "response_time_s"),
    "latency_ms": ("latency_ms", "duration_ms", "response_time_ms"),
    "prefix": ("hash_ids",),
    "cached": ("usage.prompt_tokens_details.cached_tokens", "usage.input_tokens_details.cached_tokens",
               "usage.cache_read_input_tokens", "cached_tokens"),
}

# CSV: the Azure LLM inference trace, BurstGPT, and common metrics-store exports
CSV_NAMES: dict[Role, tuple[str, ...]] = {
    "time": ("TIMESTAMP", "time", "start_time", "request_time", "created", "created_at", "ts"),
    "input": ("ContextTokens", "Request tokens", "prompt_tokens", "input_tokens", "input_length"),
    "output": ("GeneratedTokens", "Response tokens", "completion_tokens", "output_tokens", "output_length"),
    "session": ("Session ID", "session_id", "conversation_id", "thread_id"),
    "model": ("Model", "model_name"),
    "end": ("end_time", "completed_at"),
    "latency_s": ("Elapsed time", "Response time", "latency_s", "duration_s"),
    "latency_ms": ("latency_ms", "duration_ms", "response_time_ms"),
    "prefix": ("hash_ids",),
    "cached": ("cached_tokens",),
}


def normalise(name: str) -> str:
    """A CSV column name compared loosely: 'Request tokens' == 'request_tokens' == 'RequestTokens'."""
    return re.sub(r"[\s_\-]+", "", name.strip().lower())


@dataclass(frozen=True)
class FieldMap:
    """The user's `--field ROLE=NAME` overrides (a role given here is looked up under that name only)."""

    overrides: dict[Role, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, items: tuple[str, ...] | list[str]) -> FieldMap:
        out: dict[Role, str] = {}
        for item in items:
            role, sep, name = item.partition("=")
            role = role.strip()
            if not sep or not name.strip():
                raise ScenarioError(f"--field takes ROLE=NAME (e.g. --field input=usage.prompt_tokens), got {item!r}")
            if role not in ROLES:
                raise ScenarioError(f"--field: unknown role {role!r}; roles: {', '.join(ROLES)}")
            out[role] = name.strip()  # type: ignore[index]
        return cls(out)

    def json_names(self, role: Role) -> tuple[str, ...]:
        return (self.overrides[role],) if role in self.overrides else JSON_NAMES[role]

    def csv_names(self, role: Role) -> tuple[str, ...]:
        return (self.overrides[role],) if role in self.overrides else CSV_NAMES[role]

    def looked_for(self, role: Role, kind: Literal["json", "csv"]) -> str:
        names = self.json_names(role) if kind == "json" else self.csv_names(role)
        return ", ".join(names)

"""Multi-turn prompts, built as each turn is sent: the conversation so far plus the new message.

Turn 0's prompt is the session's first message. Turn k's prompt is turn k-1's prompt, the answer the
engine really gave to it, and the new user message, so consecutive prompts share a growing prefix. The
answer comes from the engine's own token ids (`Chunk.token_ids`, in-process engines); else from the
streamed text encoded with the model's tokenizer (`Adapter.answer_ids`, HTTP servers); else, where no
text or tokenizer exists, from the answer's token count with deterministic filler ids. A failed turn
has no answer (the user's next message follows the question, as in a chat app that showed an error).

A conversation that outgrows the context (the engine's and the scenario's `max_context_tokens`, less
the turn's own output) drops its oldest turns, never the first message; dropped turns stay dropped,
as a chat app's sliding window does. The message ids depend only on (seed, session, turn), so two runs
send the same messages; the answers are whatever the engine produced.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from adapters.base import Chunk, RequestSpec
from scenarios.types import Schedule

_MESSAGE, _FILLER = 21, 22  # random streams of session messages and filler answers (prompts.py uses 1, 2)
Encode = Callable[[str], "tuple[int, ...] | None"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn's request and what its prompt reused or dropped (recorded with the request)."""

    spec: RequestSpec
    n_shared: int  # prompt tokens identical to the previous turn's prompt + answer (a prefix cache can skip them)
    n_dropped: int  # earlier turns dropped from the conversation at this turn to fit the context


@dataclass
class _Conversation:
    first: tuple[int, ...]  # the first message: always kept
    turns: deque[tuple[int, ...]] = field(default_factory=deque)  # finished turns after it: [answer 0], [msg k + answer k]
    pending: tuple[int, ...] = ()  # the message of the turn in flight (joins `turns` with its answer)


class SessionPrompts:
    """`turn(i)` builds schedule entry i's request from its conversation; `answered(i, chunks, ok)` records the answer.

    Used by advisor.loadgen.drive's session runner, which calls them in turn order within each session.
    """

    def __init__(self, schedule: Schedule, vocab_size: int, *, token_range: tuple[int, int],
                 max_model_len: int | None, encode: Encode | None = None) -> None:
        assert schedule.sessions is not None, "not a session schedule"
        self.schedule = schedule
        self.vocab_size = vocab_size
        self.lo, self.hi = token_range
        limits = [x for x in (max_model_len, schedule.sessions.max_context_tokens) if x]
        self.context_tokens = min(limits) if limits else None
        self.encode = encode
        self._conv: dict[int, _Conversation] = {}

    def _message(self, i: int, n: int) -> tuple[int, ...]:
        r = self.schedule.requests[i]
        rng = np.random.default_rng([self.schedule.seed, _MESSAGE, r.session_id or 0, r.turn])
        return tuple(rng.integers(self.lo, self.hi, size=n).tolist())

    def turn(self, i: int) -> Turn:
        """Entry i's request: the conversation so far (oldest turns dropped to fit) and its new message."""
        r = self.schedule.requests[i]
        assert r.session_id is not None, f"request {i} is not part of a session"
        msg = self._message(i, r.n_in)
        if r.turn == 0:
            self._conv[r.session_id] = _Conversation(first=msg)
            return Turn(self._spec(i, msg), 0, 0)
        conv = self._conv[r.session_id]
        # first + finished turns = the previous prompt + its answer: all of it is shared, unless turns are dropped
        history = len(conv.first) + sum(len(t) for t in conv.turns)
        dropped = 0
        if self.context_tokens is not None:
            while conv.turns and history + len(msg) + r.n_out > self.context_tokens:
                history -= len(conv.turns.popleft())
                dropped += 1
        conv.pending = msg
        prompt = conv.first + tuple(t for turn in conv.turns for t in turn) + msg
        return Turn(self._spec(i, prompt), len(conv.first) if dropped else history, dropped)

    def _spec(self, i: int, prompt: tuple[int, ...]) -> RequestSpec:
        r = self.schedule.requests[i]
        return RequestSpec(request_id=f"{self.schedule.scenario}-{r.idx}", prompt_ids=prompt, max_tokens=r.n_out,
                           min_tokens=r.n_out, ignore_eos=True, user=f"{self.schedule.scenario}-s{r.session_id}")

    def answered(self, i: int, chunks: Sequence[Chunk], ok: bool) -> None:
        """Turn i ended: its answer (if it succeeded) joins the conversation for the next turn."""
        r = self.schedule.requests[i]
        conv = self._conv.get(r.session_id or 0)
        if conv is None:
            return
        answer = self.answer_ids(i, chunks) if ok else ()
        conv.turns.append(conv.pending + answer)
        conv.pending = ()
        reqs = self.schedule.requests
        if i + 1 >= len(reqs) or reqs[i + 1].session_id != r.session_id:  # its last turn: free the conversation
            self.forget(r.session_id or 0)

    def forget(self, session_id: int) -> None:
        """The session ended (or stopped early): its conversation is no longer needed."""
        self._conv.pop(session_id, None)

    def answer_ids(self, i: int, chunks: Sequence[Chunk]) -> tuple[int, ...]:
        """The answer's token ids: the engine's own, else its text re-encoded, else filler of its length."""
        n = sum(c.n_tokens for c in chunks)
        if chunks and all(c.token_ids is not None for c in chunks):
            ids = tuple(t for c in chunks for t in (c.token_ids or ()))
            if len(ids) == n:
                return ids
        text = "".join(c.text or "" for c in chunks)
        if text and self.encode is not None:
            encoded = self.encode(text)
            if encoded:
                return encoded
        r = self.schedule.requests[i]
        rng = np.random.default_rng([self.schedule.seed, _FILLER, r.session_id or 0, r.turn])
        return tuple(rng.integers(self.lo, self.hi, size=n).tolist())

    def __call__(self, i: int) -> RequestSpec:
        """Entry i's request (the loadgen's plain `specs(i)` interface); prefer `turn(i)`."""
        return self.turn(i).spec

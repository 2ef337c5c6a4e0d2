"""Schedule index -> the concrete request for this engine's vocabulary, built as it goes out (never all at once).

The load generator's one way from a `Schedule` (lengths, seed) to `RequestSpec`s: the driver, every local worker
process and every Ray actor call `spec_source` on their own schedule, so a request's prompt is the same token ids
wherever it is sent from. A plain schedule gets a function; a session schedule gets `SessionPrompts`, whose turns
hold the previous answers. It decides nothing about lengths or fit (`advisor.run.bench.check_fits` does).
"""

from __future__ import annotations

from collections.abc import Callable

from adapters.base import Adapter, EngineInfo, RequestSpec
from advisor.loadgen.sessions import SessionPrompts
from scenarios.prompts import make_prompt_ids
from scenarios.types import Schedule

# Token ids below this are left out of synthetic prompts: they are special tokens
# (BOS/EOS/PAD) in the models the tool makes, and in most real vocabularies.
_FIRST_PROMPT_TOKEN = 3


def spec_source(schedule: Schedule, info: EngineInfo,
                adapter: Adapter | None = None) -> Callable[[int], RequestSpec] | SessionPrompts:
    """Schedule index -> its concrete request for this engine's vocabulary, built when asked (never all at once).

    A session schedule gets a `SessionPrompts`: its turns hold the previous answers (re-encoded with
    `adapter.answer_ids` where the engine streams text only).
    """
    if schedule.sessions is not None:
        vocab = info.vocab_size or 32000
        return SessionPrompts(schedule, vocab, token_range=(_FIRST_PROMPT_TOKEN, vocab),
                              max_model_len=info.max_model_len,
                              encode=adapter.answer_ids if adapter is not None else None)
    return _plain_specs(schedule, info)


def _plain_specs(schedule: Schedule, info: EngineInfo) -> Callable[[int], RequestSpec]:
    """Schedule index -> its concrete request for this engine's vocabulary, built when asked (never all at once)."""
    vocab = info.vocab_size or 32000
    token_range = (_FIRST_PROMPT_TOKEN, vocab)

    def spec(i: int) -> RequestSpec:
        r = schedule.requests[i]
        return RequestSpec(request_id=f"{schedule.scenario}-{r.idx}",
                           prompt_ids=make_prompt_ids(r, schedule.seed, vocab, token_range=token_range),
                           max_tokens=r.n_out, min_tokens=r.n_out, ignore_eos=True)

    return spec

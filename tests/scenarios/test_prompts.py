from __future__ import annotations

import pytest

from scenarios.catalog import load_scenario
from scenarios.prompts import make_prompt_ids
from scenarios.schedule import Overrides, build_schedule
from scenarios.types import ScheduledRequest


def _req(idx: int, n_in: int, blocks: tuple[int, ...] = ()) -> ScheduledRequest:
    return ScheduledRequest(idx=idx, t_sched_s=0.0, n_in=n_in, n_out=4, prefix_blocks=blocks)


def test_length_range_and_determinism() -> None:
    r = _req(3, 700)
    ids = make_prompt_ids(r, 0, 2048, token_range=(3, 2048))
    assert len(ids) == 700 and min(ids) >= 3 and max(ids) < 2048
    assert ids == make_prompt_ids(r, 0, 2048, token_range=(3, 2048))
    assert ids != make_prompt_ids(r, 1, 2048, token_range=(3, 2048))
    assert ids != make_prompt_ids(_req(4, 700), 0, 2048, token_range=(3, 2048))


def test_equal_hash_ids_share_real_prefix_tokens() -> None:
    a = make_prompt_ids(_req(0, 1100, (5, 6)), 0, 512)
    b = make_prompt_ids(_req(1, 1300, (5, 6)), 0, 512)
    c = make_prompt_ids(_req(2, 1100, (5, 7)), 0, 512)
    assert a[:1024] == b[:1024]  # both 512-token blocks shared
    assert a[1024:] != b[1024:1100]  # unique tails
    assert a[:512] == c[:512] and a[512:1024] != c[512:1024]  # only the first block shared


def test_mooncake_replay_prompts_share_prefixes() -> None:
    sch = build_schedule(load_scenario("mooncake-sample"), overrides=Overrides(full_scale=True))
    by_first: dict[int, list[tuple[int, ...]]] = {}
    for r in sch.requests:
        if r.prefix_blocks:
            by_first.setdefault(r.prefix_blocks[0], []).append(make_prompt_ids(r, sch.seed, 2048)[:512])
    groups = [v for v in by_first.values() if len(v) > 1]
    assert groups and all(len(set(v)) == 1 for v in groups)


def test_bad_token_range() -> None:
    with pytest.raises(ValueError, match="token_range"):
        make_prompt_ids(_req(0, 5), 0, 100, token_range=(10, 200))

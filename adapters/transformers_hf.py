"""The `transformers` adapter: Hugging Face `generate()` served the way a team does before it adopts an engine.

The naive baseline: one engine thread owns an `AutoModelForCausalLM`. When it
is free it takes whatever requests are waiting (up to `max_batch`, those with
the same sampling settings), left-pads them into one batch and calls
`model.generate()` once with `max_new_tokens` = the batch's longest request.
Every member is computed until that longest one ends (static batching);
requests arriving meanwhile wait for the next batch. No paged KV cache, no
chunked prefill, no CUDA graphs: HF's own dynamic KV cache and SDPA attention.

Chunks are real per step: a `BaseStreamer` passed to `generate()` gets each
step's new token ids (already copied to the host, so on CUDA the step has
finished) and stamps them there with `time.perf_counter_ns()`; that stamp is
the chunk's `t_engine_ns`, so TTFT and ITL come from when each step returned,
not from the end of the batch. A member's stream ends as soon as it has its
`max_tokens` (or emits EOS when it does not ignore it), though its row keeps
being computed until the batch ends. Runs in its own process like every
engine advisor loads (adapters.engine_process).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from adapters.base import Adapter, AdapterError, Capabilities, EngineInfo, InProcessOptions, RequestSpec
from adapters.engine_thread import DONE, EngineThreadMixin, Pending, load_tokenizer

DEFAULT_MAX_BATCH = 64  # as own and own-static, so `--users 64` batches alike
DTYPES = {"fp32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16",
          "fp16": "float16", "float16": "float16"}


@dataclass
class _Pending(Pending):
    done: bool = False  # its stream has ended (all its tokens, or EOS); its row may still be computed


class TransformersOptions(InProcessOptions):
    dtype: Literal["auto", "fp32", "float32", "bf16", "bfloat16", "fp16", "float16"] = Field(
        "auto", description="weights and KV cache precision (auto: bf16 on CUDA, fp32 on CPU)")
    attn_implementation: Literal["sdpa", "eager"] = Field("sdpa", description="transformers' attention kernel")
    decode_text: bool = Field(True, description="decode each chunk's text with the model's tokenizer")


def _sampling_key(req: RequestSpec) -> tuple[float, float, int]:
    """Requests batch together only when one generate() call can serve them all."""
    return (req.temperature, req.top_p, req.top_k) if req.temperature > 0 else (0.0, 1.0, 0)


class TransformersAdapter(EngineThreadMixin, Adapter[TransformersOptions]):
    name: ClassVar[str] = "transformers"
    Options: ClassVar[type[TransformersOptions]] = TransformersOptions
    capabilities: ClassVar[Capabilities] = Capabilities(served=False, per_chunk_tokens=True, own_process=True)

    def __init__(self, model: str | None = None, options: TransformersOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        self.max_batch = o.max_batch or DEFAULT_MAX_BATCH
        self._model: Any = None
        self._device: Any = None
        self._eos: int | None = None
        self._pad = 0
        self._max_len = 0
        self._init_engine_thread()

    def _start(self) -> EngineInfo:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM

        from model_cache.resolve import resolve_model
        from own_engine.core.engine_facts import pick_device

        o = self.options
        src = resolve_model(self.model)
        try:
            device = pick_device(o.device.lower())
        except (RuntimeError, ValueError) as e:  # "cuda" without a GPU, a misspelt device
            raise ValueError(f"transformers adapter: {e}") from None
        dtype_name = DTYPES.get(o.dtype) or ("bfloat16" if device.type == "cuda" else "float32")
        if o.threads and device.type == "cpu":
            torch.set_num_threads(o.threads)
        transformers.utils.logging.disable_progress_bar()
        cfg = AutoConfig.from_pretrained(str(src))
        model = AutoModelForCausalLM.from_pretrained(str(src), dtype=getattr(torch, dtype_name),
                                                     attn_implementation=o.attn_implementation)
        self._model = model.to(device).eval()
        self._device = device
        eos = cfg.eos_token_id
        self._eos = eos[0] if isinstance(eos, list) else eos
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else self._eos
        self._pad = int(pad or 0)
        self._max_len = int(getattr(cfg, "max_position_embeddings", 0) or 2048)
        self._tok = load_tokenizer(src) if o.decode_text else None
        self._start_engine_thread("transformers-engine")
        precision = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}[dtype_name]
        dev_name = f"cuda:{device.index or 0} ({torch.cuda.get_device_name(device.index or 0)})" \
            if device.type == "cuda" else "cpu"
        return EngineInfo(
            adapter=self.name, engine="Hugging Face transformers (generate)", version=transformers.__version__,
            device=dev_name, model=str(src), format="hf-safetensors", precision=precision, batching="static",
            threads=torch.get_num_threads(), kv_cache_dtype=precision, max_batch=self.max_batch,
            vocab_size=int(cfg.vocab_size), max_model_len=self._max_len, pid=os.getpid(),
            extra={"attn_implementation": o.attn_implementation, "torch": torch.__version__,
                   "n_params": sum(p.numel() for p in self._model.parameters())},
            notes=("static batching as a team serves generate() before adopting an engine: the requests waiting when "
                   "a batch starts (up to max_batch, same sampling settings) are left-padded and run to the "
                   "batch's longest member; requests arriving meanwhile wait for the next batch",
                   "chunk stamps are taken in generate()'s streamer, as each step's token ids reach the host"))

    def _close(self) -> None:
        self._stop_engine_thread()
        self._model = None

    def _admit(self, req: RequestSpec) -> _Pending:
        if self._model is None or self._thread is None:
            raise AdapterError("engine", "the transformers adapter was not started; call start() first")
        self.refuse_unservable(req, self._max_len, f"the model's context {self._max_len} (max_position_embeddings)")
        vocab = int(self._model.config.vocab_size)
        bad = [t for t in req.prompt_ids if not 0 <= t < vocab]
        if bad:
            raise AdapterError("refused", f"prompt token id {bad[0]} is outside the model's vocab [0, {vocab})")
        return _Pending(req)

    # ---- the engine thread ---------------------------------------------------------------------
    def _run(self) -> None:
        held: list[_Pending] = []  # taken from the inbox but not yet batched (other sampling settings)
        while not self._stop.is_set():
            waiting = held + self._take_new(wait=not held, most=max(0, self.max_batch - len(held)))
            waiting = [p for p in waiting if not p.cancelled]  # type: ignore[attr-defined]
            if not waiting:
                held = []
                continue
            key = _sampling_key(waiting[0].req)
            batch = [p for p in waiting if _sampling_key(p.req) == key][:self.max_batch]
            taken = {id(p) for p in batch}
            held = [p for p in waiting if id(p) not in taken]
            self._stats = {"running": float(len(batch)), "waiting": float(len(held) + self._inbox.qsize())}
            try:
                self._generate(batch)  # type: ignore[arg-type]
            except Exception as e:  # the batch failed: its members fail, the thread serves the next batch
                for p in batch:
                    if not p.done:  # type: ignore[attr-defined]
                        p.put(AdapterError("engine", f"transformers generate() failed: {type(e).__name__}: {e}"))
            self._stats = {"running": 0.0, "waiting": float(len(held) + self._inbox.qsize())}
        for p in held + self._take_new(wait=False):  # closed with requests still waiting
            p.put(AdapterError("cancelled", "the transformers adapter was closed"))

    def _generate(self, batch: list[_Pending]) -> None:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        reqs = [p.req for p in batch]
        width = max(r.n_in for r in reqs)
        dev = self._device
        ids = torch.tensor([[self._pad] * (width - r.n_in) + list(r.prompt_ids) for r in reqs], device=dev)
        mask = torch.tensor([[0] * (width - r.n_in) + [1] * r.n_in for r in reqs], device=dev)
        first = reqs[0]
        sample = first.temperature > 0
        gen = GenerationConfig(max_new_tokens=max(r.max_tokens for r in reqs), do_sample=sample,
                               temperature=first.temperature if sample else None,
                               top_p=first.top_p if sample else None, top_k=(first.top_k or None) if sample else None,
                               pad_token_id=self._pad,
                               eos_token_id=None if all(r.ignore_eos for r in reqs) else self._eos)
        if sample and first.seed is not None:  # one generator per batch: a seed is reproducible for a batch of one
            torch.manual_seed(int(first.seed))
        streamer = _BatchStreamer(batch, None if gen.eos_token_id is None else self._eos)
        with torch.inference_mode():
            self._model.generate(input_ids=ids, attention_mask=mask, generation_config=gen, streamer=streamer,
                                 logits_processor=LogitsProcessorList([_HoldEos(batch, self._eos)]),
                                 stopping_criteria=StoppingCriteriaList([_StopWhen(batch, self._stop)]))
        for p in batch:  # generate() ended early (closed, or every member cancelled)
            if not p.done:
                p.done = True
                p.put(AdapterError("cancelled", "the transformers adapter was closed"))


class _BatchStreamer:
    """generate()'s streamer: the first put() is the prompt; each later one is one step's token per row, [B]."""

    def __init__(self, batch: list[_Pending], eos: int | None) -> None:
        self.batch, self.eos, self.prompt_seen = batch, eos, False

    def put(self, value: Any) -> None:
        t_ns = time.perf_counter_ns()  # the step's ids are on the host: the step has ended
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        for p, tok in zip(self.batch, value.tolist(), strict=True):
            if p.done or p.cancelled:
                continue
            p.produced += 1
            p.put((t_ns, [int(tok)]))
            ended_by_eos = self.eos is not None and tok == self.eos and not p.req.ignore_eos
            if p.produced >= p.req.max_tokens or ended_by_eos:
                p.done = True
                p.put(DONE)

    def end(self) -> None:
        pass


class _HoldEos:
    """Logits processor: no EOS for a row before its `min_tokens` (all its `max_tokens` with `ignore_eos`)."""

    def __init__(self, batch: list[_Pending], eos: int | None) -> None:
        self.eos = eos
        self.floor = [p.req.max_tokens if p.req.ignore_eos else p.req.min_tokens for p in batch]
        self.start: int | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.eos is None or not 0 <= self.eos < scores.shape[-1]:
            return scores
        if self.start is None:
            self.start = input_ids.shape[1]
        made = input_ids.shape[1] - self.start
        rows = [i for i, f in enumerate(self.floor) if made < f]
        if rows:
            scores[rows, self.eos] = float("-inf")
        return scores


class _StopWhen:
    """Stopping criteria: end the batch when the adapter closes or every member has ended or been cancelled."""

    def __init__(self, batch: list[_Pending], stop: threading.Event) -> None:
        self.batch, self.stop = batch, stop

    def __call__(self, input_ids: Any, scores: Any, **kw: Any) -> Any:
        import torch

        end = self.stop.is_set() or all(p.done or p.cancelled for p in self.batch)
        return torch.full((input_ids.shape[0],), end, dtype=torch.bool, device=input_ids.device)

"""The `llama_cpp` adapter: llama.cpp through llama-cpp-python's low-level API, in-process, on GGUF.

The HF folder is converted on first use (`adapters.formats.convert(..., "gguf")`,
cached and logit-checked). The high-level `Llama` class serves one sequence
at a time and silently reuses a matching prompt prefix, so this adapter
drives llama.cpp's C API directly (as llama.cpp's own server does): one
context with `max_batch` sequence slots over a unified KV cache, one engine
thread that admits new requests between steps and packs every active
sequence's next token (and pending prompt chunks) into one `llama_batch`
per `llama_decode`. That is continuous batching; with `max_batch=1` requests
queue and EngineInfo says batching="none". Each request's KV is removed when
it ends, so no prefix is ever reused. The KV cache is f16 by default, as in
llama.cpp itself (ggml's CPU attention over an f32 KV cache is ~5x slower per
batched step); `kv_cache_precision="f32"` gives exact fp32 agreement. Greedy/sampled selection is done here
on the engine's logits (numpy), with EOS masked for exact output lengths.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from adapters.base import Adapter, AdapterError, Capabilities, EngineInfo, InProcessOptions, RequestSpec, VerifyCase
from adapters.engine_thread import DONE, EngineThreadMixin, Pending, convert_on_first_use, load_tokenizer
from adapters.formats import checked_precision, limits


@dataclass
class _Seq(Pending):
    seq_id: int = -1  # the llama.cpp sequence slot
    fed: int = 0  # prompt tokens already in the KV cache
    last: int = -1  # last sampled token, fed at the next step
    rng: Any = None


class LlamaCppOptions(InProcessOptions):
    precision: str = Field("fp32", description="GGUF weights: fp32, fp16, q8_0 (int8), q4_0 (int4)")
    n_ctx: int | None = Field(None, ge=16, description="context per sequence (default: the model's)")
    n_batch: int = Field(512, ge=1, description="tokens per llama_decode call")
    kv_cache_precision: Literal["f32", "f16"] = Field("f16", description="KV cache type (f32 for exact agreement)")
    extra_buffers: bool | None = Field(None, description="llama.cpp's repacking buffers (default: unless AMX)")
    flash_attn: bool | None = Field(None, description="flash attention (default: llama.cpp's auto)")
    decode_text: bool = Field(True, description="decode each chunk's text with the model's tokenizer")

    @field_validator("precision")
    @classmethod
    def _known_precision(cls, v: str) -> str:
        return checked_precision("gguf", v)


class LlamaCppAdapter(EngineThreadMixin, Adapter[LlamaCppOptions]):
    name: ClassVar[str] = "llama_cpp"
    Options: ClassVar[type[LlamaCppOptions]] = LlamaCppOptions
    capabilities: ClassVar[Capabilities] = Capabilities(
        served=False, per_chunk_tokens=True, own_process=True,
        # ggml rounds activations to fp16 for fp16 weights: drift allowed there
        verify=(VerifyCase("gguf", "fp32", strict=True), VerifyCase("gguf", "fp16"), VerifyCase("gguf", "q8_0"),
                VerifyCase("gguf", "q4_0")))

    @classmethod
    def verify_options(cls, case: VerifyCase) -> dict[str, Any]:
        # agreement is about the weights' format, not a lossy KV cache
        return {"precision": case.precision, "kv_cache_precision": "f32"}

    def __init__(self, model: str | None = None, options: LlamaCppOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        if o.device.lower() not in ("cpu", "auto"):
            raise ValueError(f"the llama_cpp adapter runs on the CPU here (device='cpu'), got device={o.device!r}")
        self.precision = o.precision
        self.threads = o.threads or (os.cpu_count() or 1)
        self.n_ctx = o.n_ctx
        self.n_batch = o.n_batch
        self.parallel = o.max_batch or 1
        self.kv_cache_precision = o.kv_cache_precision
        self.extra_buffers = o.extra_buffers  # None: llama.cpp's repacking buffers unless the CPU advertises AMX
        self.flash_attn = o.flash_attn  # None: llama.cpp's default (auto)
        self.decode_text = o.decode_text
        self._ll: Any = None  # the llama_cpp module
        self._model: Any = None
        self._ctx: Any = None
        self._n_vocab = 0
        self._eos: set[int] = set()
        self._max_len = 0
        self._init_engine_thread()

    # ---- lifecycle -------------------------------------------------------------------------------
    def _start(self) -> EngineInfo:
        import llama_cpp as ll

        from adapters.formats.gguf import FILENAME, extra_buffers_default, load

        src, self.precision, out, cfg, convert_s = convert_on_first_use(self.model, "gguf", self.precision)
        path = out / FILENAME
        self._ll = ll
        lim = limits.llama_cpp(cfg, self.precision)
        train_ctx = lim.max_context  # the trained context, or a sliding window
        self._max_len = min(train_ctx, int(self.n_ctx or train_ctx))
        # unified KV cache of max_len per slot: every slot can reach the full length
        self._model, self._ctx = load(path, n_ctx=self._max_len * self.parallel, n_batch=self.n_batch,
                                      n_seq=self.parallel, threads=self.threads,
                                      kv_f32=self.kv_cache_precision == "f32", extra_buffers=self.extra_buffers,
                                      flash_attn=self.flash_attn)
        vocab = ll.llama_model_get_vocab(self._model)
        self._n_vocab = int(ll.llama_vocab_n_tokens(vocab))
        self._eos = {t for t in range(self._n_vocab) if ll.llama_vocab_is_eog(vocab, t)}
        self._eos.update(t for t in (int(ll.llama_vocab_eos(vocab)), *_config_eos(cfg)) if 0 <= t < self._n_vocab)
        self._tok = load_tokenizer(src) if self.decode_text else None
        self._start_engine_thread("llama-cpp-engine")
        batching = "continuous" if self.parallel > 1 else "none"
        notes = (f"llama.cpp batched decode over {self.parallel} sequence slots (unified KV cache); new requests "
                 "join between steps" if self.parallel > 1 else
                 "max_batch=1: llama.cpp serves one sequence at a time; overlapping requests queue",
                 "no prompt-prefix reuse: each request's KV is removed when it ends")
        return EngineInfo(
            convert_s=convert_s,
            adapter=self.name, engine="llama.cpp (llama-cpp-python)", version=ll.__version__, device="cpu",
            model=str(src), format="gguf", precision=self.precision, batching=batching,  # type: ignore[arg-type]
            threads=self.threads, kv_cache_dtype=self.kv_cache_precision, max_batch=self.parallel,
            vocab_size=int(cfg["vocab_size"]), max_model_len=self._max_len, pid=os.getpid(),
            extra={"gguf": str(path), "n_ctx_total": int(ll.llama_n_ctx(self._ctx)), "n_batch": self.n_batch,
                   "extra_buffers": extra_buffers_default() if self.extra_buffers is None else self.extra_buffers,
                   "flash_attn": "auto" if self.flash_attn is None else self.flash_attn},
            notes=(*notes, *lim.notes))

    def _close(self) -> None:
        self._stop_engine_thread()
        self._free()

    def _free(self) -> None:
        if self._ctx:
            self._ll.llama_free(self._ctx)
        if self._model:
            self._ll.llama_model_free(self._model)
        self._ctx = self._model = None

    # ---- requests --------------------------------------------------------------------------------
    def _admit(self, req: RequestSpec) -> _Seq:
        if self._ctx is None or self._thread is None:
            raise AdapterError("engine", "the llama_cpp adapter was not started; call start() first")
        self.refuse_unservable(req, self._max_len, f"the context of {self._max_len} tokens per sequence (n_ctx=)")
        bad = [t for t in req.prompt_ids if not 0 <= t < self._n_vocab]
        if bad:
            raise AdapterError("refused", f"token ids {bad[:5]} are outside the vocab [0, {self._n_vocab})")
        return _Seq(req, rng=np.random.default_rng(req.seed) if req.temperature > 0 else None)

    # ---- engine thread ---------------------------------------------------------------------------
    def _select(self, s: _Seq, logits: np.ndarray) -> int:
        x = logits.astype(np.float64, copy=True)
        if s.req.ignore_eos or s.produced < s.req.min_tokens:
            x[list(self._eos)] = -np.inf
        if s.rng is None:
            return int(np.argmax(x))
        x /= s.req.temperature
        if s.req.top_k > 0:
            kth = np.partition(x, -s.req.top_k)[-s.req.top_k]
            x[x < kth] = -np.inf
        p = np.exp(x - x.max())
        p /= p.sum()
        if s.req.top_p < 1.0:
            order = np.argsort(-p)
            keep = np.cumsum(p[order]) - p[order] < s.req.top_p
            mask = np.zeros_like(p, dtype=bool)
            mask[order[keep]] = True
            p = np.where(mask, p, 0.0)
            p /= p.sum()
        return int(s.rng.choice(len(p), p=p))

    def _run(self) -> None:
        ll = self._ll
        batch = ll.llama_batch_init(self.n_batch, 0, 1)
        mem = ll.llama_get_memory(self._ctx)
        free_slots = list(range(self.parallel))
        active: list[_Seq] = []
        try:
            while not self._stop.is_set():
                for s in self._take_new(wait=not active, most=len(free_slots)):
                    assert isinstance(s, _Seq)
                    s.seq_id = free_slots.pop(0)
                    active.append(s)
                for s in [s for s in active if s.cancelled]:
                    ll.llama_memory_seq_rm(mem, s.seq_id, -1, -1)
                    free_slots.append(s.seq_id)
                    active.remove(s)
                if not active:
                    continue
                # pack: one decode token per generating sequence, then prompt chunks while the batch has room
                n = 0
                wants: list[tuple[_Seq, int]] = []  # (sequence, batch index whose logits it needs)
                for s in active:
                    if s.fed == s.req.n_in:
                        _put(batch, n, s.last, s.req.n_in + s.produced - 1, s.seq_id, True)
                        wants.append((s, n))
                        n += 1
                for s in active:
                    while s.fed < s.req.n_in and n < self.n_batch:
                        last = s.fed == s.req.n_in - 1
                        _put(batch, n, s.req.prompt_ids[s.fed], s.fed, s.seq_id, last)
                        if last:
                            wants.append((s, n))
                        s.fed += 1
                        n += 1
                batch.n_tokens = n
                rc = ll.llama_decode(self._ctx, batch)
                if rc != 0:
                    for s in active:
                        ll.llama_memory_seq_rm(mem, s.seq_id, -1, -1)
                        free_slots.append(s.seq_id)
                        s.put(AdapterError("engine", f"llama_decode failed with code {rc}"))
                    active.clear()
                    continue
                t_ns = time.perf_counter_ns()
                finished = []
                for s, idx in wants:
                    ptr = ll.llama_get_logits_ith(self._ctx, idx)
                    logits = np.ctypeslib.as_array(ptr, shape=(self._n_vocab,))
                    tok = self._select(s, logits)
                    s.last = tok
                    s.produced += 1
                    s.put((t_ns, [tok]))
                    if s.produced == s.req.max_tokens:
                        finished.append(s)
                        ll.llama_memory_seq_rm(mem, s.seq_id, -1, -1)
                        free_slots.append(s.seq_id)
                        active.remove(s)
                used = sum(s.fed + s.produced for s in active)
                self._stats = {"running": float(len(active)), "waiting": float(self._inbox.qsize()),
                               "kv_tokens_used": float(used), "kv_tokens_total": float(self._max_len * self.parallel)}
                for s in finished:  # after the stats: a caller reading stats() once its stream ends sees this step
                    s.put(DONE)
            for s in active:  # closed while requests were in flight
                s.put(AdapterError("cancelled", "the llama_cpp adapter was closed"))
        finally:
            ll.llama_batch_free(batch)


def _config_eos(cfg: dict) -> list[int]:
    eos = cfg.get("eos_token_id")
    return [int(e) for e in eos] if isinstance(eos, list) else ([] if eos is None else [int(eos)])


def _put(batch: Any, i: int, token: int, pos: int, seq_id: int, logits: bool) -> None:
    batch.token[i] = token
    batch.pos[i] = pos
    batch.n_seq_id[i] = 1
    batch.seq_id[i][0] = seq_id
    batch.logits[i] = ctypes.c_int8(1 if logits else 0).value

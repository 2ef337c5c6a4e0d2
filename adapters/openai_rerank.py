"""Any server with the rerank API most servers share (`POST /v1/rerank`: infinity-emb, vLLM, TEI, Cohere-style
hosted APIs) as a rerank engine.

The openai-embed adapter's client, options and token accounting, with the rerank body
`{"model", "query", "documents", "return_documents": false}` and its answer `{"results": [{"index",
"relevance_score"}], "usage"}` put back in the passages' order. With `tokenizer`, a request's tokens are
the (query, passage) pairs as a cross-encoder reads them, special tokens included. A server whose usage
counts characters (infinity-emb counts the query once per passage) is caught at the warm-up.
"""

from __future__ import annotations

from typing import Any

from adapters.base import AdapterError
from adapters.embed_base import EmbedRequest, EmbedResult
from adapters.json_codec import loads
from adapters.openai_embed import OpenAIEmbedAdapter

PATH = "/v1/rerank"


class OpenAIRerankAdapter(OpenAIEmbedAdapter):
    name = "openai-rerank"
    tasks = ("rerank",)
    path = PATH

    def _body(self, req: EmbedRequest) -> dict[str, Any]:
        assert req.query is not None, "a rerank request needs a query"
        return {"model": self.served_model, "query": req.query, "documents": list(req.texts),
                "return_documents": False}

    def _parse(self, body: bytes, req: EmbedRequest, t_ns: int) -> EmbedResult:
        try:
            doc: Any = loads(body)
            scores = {int(r["index"]): float(r["relevance_score"]) for r in doc["results"]}
            usage = doc.get("usage") or {}
        except (ValueError, KeyError, TypeError) as e:
            raise AdapterError("stream", f"{PATH} answered something that is not a rerank result "
                                         f"({type(e).__name__}: {e}): {body[:200]!r}") from None
        if sorted(scores) != list(range(len(req.texts))):
            raise AdapterError("stream", f"{PATH} scored passages {sorted(scores)[:10]} of {len(req.texts)}")
        n = usage.get("prompt_tokens", usage.get("total_tokens"))
        n = int(n) if n is not None else None
        return EmbedResult(t_ns, len(req.texts), n, 1, None, n_tokens_server=n,
                           scores=tuple(scores[i] for i in range(len(req.texts))) if req.return_vectors else None)

    def _count(self, req: EmbedRequest) -> int:
        return sum(len(e.ids) for e in self._tokenizer.encode_batch([(req.query, p) for p in req.texts]))

    @staticmethod
    def _characters(req: EmbedRequest) -> int:
        return sum(len(req.query or "") + len(p) for p in req.texts)

"""A small OpenAI `/v1/embeddings` (and `/v1/rerank`) server on loopback for the tests, in a process of its own.

Its own process so that it never takes the test client's interpreter (the GIL) from the load generator.
The work is a deterministic stand-in (`words`: (words, characters, 1.0) per text, tokens = words) for the
fast tests, or a real sentence-transformers model (`st:FOLDER`) where a test checks vectors. `usage` is
"tokens", "chars" (characters, as infinity-emb counts) or "none" (no usage block); `endpoint=False`
answers 404 as a chat-only server does. `/v1/rerank` scores a passage by the words it shares with the
query and answers best first, as servers do; its usage counts the query's and the passage's words.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _words(texts: list[str]) -> tuple[list[list[float]], int]:
    return [[float(len(t.split())), float(len(t)), 1.0] for t in texts], sum(len(t.split()) for t in texts)


def _sentence_transformers(folder: str):  # noqa: ANN202
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(folder, device="cpu")

    def embed(texts: list[str]) -> tuple[list[list[float]], int]:
        n = int(m.tokenize(texts)["attention_mask"].sum())
        return m.encode(texts, batch_size=len(texts)).tolist(), n

    return embed


def serve(work: str, usage: str, endpoint: bool, model: str) -> None:
    embed = _words if work == "words" else _sentence_transformers(work.removeprefix("st:"))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # head and body go out at once, no delayed-ACK stall

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _send(self, status: int, doc: object) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            self._send(200, {"object": "list", "data": [{"id": model, "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if endpoint and self.path == "/v1/rerank":  # score: words the passage shares with the query
                q = set(body["query"].split())
                results = sorted(({"index": i, "relevance_score": float(len(q & set(d.split())))}
                                  for i, d in enumerate(body["documents"])), key=lambda r: -r["relevance_score"])
                n = sum(len(body["query"].split()) + len(d.split()) for d in body["documents"])
                self._send(200, {"object": "rerank", "results": results, "model": body["model"],
                                 "usage": {"prompt_tokens": n, "total_tokens": n}})
                return
            if not endpoint or self.path != "/v1/embeddings":
                self._send(404, {"detail": "Not Found"})
                return
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vecs, n_tokens = embed(texts)
            doc: dict[str, object] = {"object": "list", "model": body["model"],
                                      "data": [{"object": "embedding", "index": i, "embedding": v}
                                               for i, v in reversed(list(enumerate(vecs)))]}  # out of order on purpose
            if usage != "none":
                n = n_tokens if usage == "tokens" else sum(len(t) for t in texts)
                doc["usage"] = {"prompt_tokens": n, "total_tokens": n}
            self._send(200, doc)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


@contextmanager
def embeddings_server(work: str = "words", usage: str = "tokens", endpoint: bool = True,
                      model: str = "test-embedder") -> Iterator[str]:
    """Serve in a child process until the block ends; yields the base URL."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "tests.adapters.embed_server", work, str(usage), str(endpoint),
                             model], cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        assert port.isdigit(), f"the test embeddings server did not start (got {port!r})"
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3] == "True", sys.argv[4])

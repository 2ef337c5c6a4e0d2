"""A zero-work OpenAI `/v1/embeddings` server: answers every POST with one fixed 4-float vector per input.

For the embed load generator's own ceiling (`benchmarks/embed_loadgen.py`): the server does no model
work, so what limits the rate is the client. asyncio protocol, keep-alive, Content-Length bodies only;
the body is parsed with json to count the inputs, nothing else. Prints its port, then serves.

    python benchmarks/zero_embed_server.py [--port 0] [--uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import json

VECTOR = b'{"object":"embedding","index":%d,"embedding":[0.5,0.5,0.5,0.5]}'


class Server(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.t = transport
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].lower()
            i = head.find(b"content-length:")
            n = int(head[i + 15:head.find(b"\r\n", i) if head.find(b"\r\n", i) > 0 else None]) if i >= 0 else 0
            if len(self.buf) < end + 4 + n:
                return
            body, self.buf = self.buf[end + 4:end + 4 + n], self.buf[end + 4 + n:]
            if head.startswith(b"get"):
                out = b'{"object":"list","data":[{"id":"zero","object":"model"}]}'
            else:
                texts = json.loads(body)["input"]
                k = len(texts) if isinstance(texts, list) else 1
                words = sum(len(t.split()) for t in texts) if isinstance(texts, list) else len(texts.split())
                out = (b'{"object":"list","model":"zero","data":[' + b",".join(VECTOR % j for j in range(k))
                       + b'],"usage":{"prompt_tokens":%d,"total_tokens":%d}}' % (words, words))
            self.t.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%b"
                         % (len(out), out))  # type: ignore[attr-defined]


async def main(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Server, "127.0.0.1", port)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--uvloop", action="store_true")
    a = ap.parse_args()
    if a.uvloop:
        import uvloop

        uvloop.run(main(a.port))
    else:
        asyncio.run(main(a.port))

"""An incremental Server-Sent-Events decoder for OpenAI-style streams.

Feed it raw bytes as they arrive (events may be split across TCP reads, or
several may share one read); it returns the `data` payload of each complete
event. It follows the WHATWG event-stream rules that matter here: `\\n`,
`\\r\\n` or `\\r` line ends, `:` comment lines, multi-line `data:` fields joined
with `\\n`, and other fields (`event:`, `id:`, `retry:`) ignored. Written by hand
because it is ~60 lines and the maintained parsers wrap a whole HTTP client.
"""

from __future__ import annotations


class SSEDecoder:
    """Bytes in, complete event payloads out; `pending()` says whether a half event is left."""

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[str] = []
        self._skip_lf = False  # the last read ended in CR: a LF starting the next one belongs to it

    def feed(self, raw: bytes) -> list[str]:
        """Add bytes; return the data payloads of every event they completed."""
        if self._skip_lf and raw:
            raw = raw[1:] if raw[:1] == b"\n" else raw
            self._skip_lf = False
        self._buf = self._buf + raw if self._buf else raw
        events: list[str] = []
        if b"\r" not in self._buf:  # the common case (LF only): split into events, not lines
            *blocks, self._buf = self._buf.split(b"\n\n")
            for block in blocks:
                if not self._data and block.startswith(b"data:") and b"\n" not in block:
                    value = block[6:] if block[5:6] == b" " else block[5:]  # one `data:` line: the event
                    events.append(value.decode("utf-8", errors="replace"))
                    continue
                for raw_line in block.split(b"\n"):
                    self._line(raw_line.decode("utf-8", errors="replace"), events)
                self._line("", events)  # the blank line that ended the block
            return events
        while True:
            line, ok = self._next_line()
            if not ok:
                return events
            self._line(line, events)

    def _line(self, line: str, events: list[str]) -> None:
        """One line: a blank line ends the event, `data:` adds to it, comments and other fields are skipped."""
        if line == "":
            if self._data:
                events.append("\n".join(self._data))
                self._data = []
            return
        if line.startswith(":"):
            return  # comment / keep-alive
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)

    def idle(self) -> bool:
        """Nothing buffered: the next read starts a new event."""
        return not self._buf and not self._data and not self._skip_lf

    def pending(self) -> bool:
        """True when bytes or fields of an event that never ended are buffered."""
        return bool(self._buf.strip()) or bool(self._data)

    def flush(self) -> list[str]:
        """End of stream: return an event left without its blank line (lenient, as browsers are not)."""
        events = self.feed(b"\n\n") if self.pending() else []
        self._buf = b""
        return events

    def _next_line(self) -> tuple[str, bool]:
        buf = self._buf
        i_n = buf.find(b"\n")
        i_r = buf.find(b"\r")
        if i_n < 0 and i_r < 0:
            return "", False
        if i_r >= 0 and (i_n < 0 or i_r < i_n):
            if i_r == len(buf) - 1:
                self._skip_lf = True  # a CR ending this read ends the line now; drop its LF if one follows
            end, skip = i_r, 2 if buf[i_r + 1:i_r + 2] == b"\n" else 1
        else:
            end, skip = i_n, 1
        line = buf[:end].decode("utf-8", errors="replace")
        self._buf = buf[end + skip:]
        return line, True

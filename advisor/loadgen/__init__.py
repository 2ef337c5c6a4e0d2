"""The load generator: a schedule driven into an engine, on one process, several, or Ray actors; raw records out.

- `drive`: the asyncio loop that sends a schedule (open, closed, offline, sessions) and records what it saw;
  `send_loops`: when each request goes out (the open, closed and session loops and their precise wait);
  `cpu_wait`: how long each send waited for the client's CPU behind another task (the kernel's count);
- `spec_source`: schedule index -> the concrete request, built as it goes out; `sessions`: multi-turn prompts;
- `records`: one raw `RequestRecord` per request (metrics are computed from these in `advisor.metrics`);
- `eventloop`: uvloop or asyncio, the loop a run is driven on;
- `worker_spec`: `--workers` parsed; `workers` + `worker_process`: a schedule sharded over local processes;
- `ray_workers` + `ray_actor`: the same shards on Ray actors (connection: `advisor.matrix.ray_connect`), their clocks
  lined up by `clock_sync`;
- `info`: result.json's `loadgen` object, what the load generator says about its own run;
- `stall`: a line on stderr while requests are open and nothing arrives (a hung server is not silence).

It computes no metrics and saves nothing: `advisor.run.bench` does both. Import the modules, not this package: it
re-exports nothing, so importing `advisor.loadgen.records` costs no asyncio, workers or Ray.
"""

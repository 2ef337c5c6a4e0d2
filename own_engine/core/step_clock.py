"""StepClock: where an engine step's wall time goes, kept as running totals for the run's engine statistics.

One step is cut at four marks into parts that add up to its wall time:

- `host_before`: from the step's start (the async front taking its inbox, or `LLMEngine.step()` when driven
  directly) to the forward's start: new requests admitted, the scheduler, the block manager, input preparation;
- `forward`: the forward itself (on CUDA up to the device's completion, so it is device time; on CPU the
  computation; on a simulated device the profile's step time);
- `forward_overrun`: on a simulated device only, the time from the simulated device's completion until the step
  thread ran again (the sleep's overshoot: waiting for the GIL or the OS scheduler; on CUDA the same wait hides
  inside `forward`), and the launches' time past the device's when the host could not keep up (a host-bound step);
- `sample_output`: from the forward's end to `step()` returning: sampling, `.tolist()`, the scheduler's
  postprocess (stops, frees), the step's outputs;
- `handoff`: from `step()` returning to the tokens being handed to the front (the async front's delivery to the
  event loops and its gauges); 0 when nothing but the caller takes the outputs.

With overlap scheduling (`EngineConfig(overlap=True)`) a `step()` launches step n+1 and then resolves step n, so
its `forward` is the launch of step n+1 plus the wait for step n's device time, `host_before` is step n+1's
scheduling and input preparation (done while step n runs), and `sample_output` is step n's resolution; the
parts still add up to the call's wall time. The call that only waits for a burst's last step counts too.

Besides these, `off_cpu`: of the step's host time (all but the forward where the forward is device time; all of
it on CPU, where the forward is this thread's computation), the wall time the step thread was not running on a
CPU: waiting for the GIL or for the OS to schedule it (wall time minus the thread's CPU time).

Totals are in seconds and only grow, so a gauge's peak in result.json (`engine_stats`, `engine_step_*_s_peak`)
is its value at the end of the run; divide by `timed_steps` for means.
"""

from __future__ import annotations

from time import perf_counter_ns, thread_time_ns

PARTS = ("host_before", "forward", "forward_overrun", "sample_output", "handoff")


class StepClock:
    def __init__(self, forward_is_device: bool) -> None:
        self.forward_is_device = forward_is_device
        self.totals_ns = dict.fromkeys(PARTS, 0)
        self.wall_ns = 0
        self.off_cpu_ns = 0
        self.steps = 0
        self._open = False
        self._front_owned = False
        self._t = [0, 0, 0, 0]  # start, forward start, forward end, engine step end
        self._overrun = 0  # of the forward, ns past a simulated device's completion
        self._c = [0, 0, 0]  # thread CPU time at start, forward start, forward end

    def begin(self, front: bool = False) -> None:
        """A step starts (no-op if one is open: the front began it before calling step())."""
        if self._open:
            return
        self._open, self._front_owned = True, front
        self._t[0], self._c[0] = perf_counter_ns(), thread_time_ns()
        self._t[1] = self._t[2] = 0

    def mark_forward_start(self) -> None:
        self._t[1], self._c[1] = perf_counter_ns(), thread_time_ns()

    def mark_forward_end(self, device_ns: int | None = None) -> None:
        """The forward returned; `device_ns`: how long the (simulated) device took, the rest is overrun."""
        self._t[2], self._c[2] = perf_counter_ns(), thread_time_ns()
        self._overrun = max(0, self._t[2] - self._t[1] - device_ns) if device_ns is not None else 0

    def cancel(self) -> None:
        """The step had nothing to run: it is not counted."""
        self._open = False

    def engine_done(self) -> None:
        """`step()` is returning; the step ends here unless the front began it (then it ends at `handoff_done`)."""
        if not self._open:
            return
        self._t[3] = perf_counter_ns()
        if not self._front_owned:
            self._finish(self._t[3])

    def handoff_done(self) -> None:
        """The front handed the step's tokens on: the step ends."""
        if self._open and self._t[3]:
            self._finish(perf_counter_ns())
        self._open = False

    def _finish(self, t_end: int) -> None:
        c_end = thread_time_ns()
        t0, tf0, tf1, te = self._t
        if not tf0:  # a runner that did not mark its forward: all of it counts as forward
            tf0, tf1 = t0, te
            self._c[1] = self._c[2] = self._c[0]
        over = self._overrun if tf1 > tf0 else 0
        parts = (tf0 - t0, tf1 - tf0 - over, over, te - tf1, t_end - te)
        for name, ns in zip(PARTS, parts, strict=True):
            self.totals_ns[name] += ns
        wall = t_end - t0
        cpu = c_end - self._c[0]
        if self.forward_is_device:
            wall -= tf1 - tf0 - over  # the overrun stays: the thread was off the CPU, waiting to run
            cpu -= self._c[2] - self._c[1]
        self.off_cpu_ns += max(0, wall - cpu)
        self.wall_ns += t_end - t0
        self.steps += 1
        self._open = False
        self._t[3] = 0
        self._overrun = 0

    def stats(self) -> dict[str, float]:
        out = {f"step_{k}_s": v / 1e9 for k, v in self.totals_ns.items()}
        out.update(step_wall_s=self.wall_ns / 1e9, step_off_cpu_s=self.off_cpu_ns / 1e9, timed_steps=self.steps)
        return out

"""The exit code after a signal: 128 + the signal, even when a library re-raised a plain KeyboardInterrupt."""

from __future__ import annotations

import signal

import pytest

from advisor.run import interrupts


def test_exit_code_is_128_plus_the_signal_even_after_a_library_lost_it(monkeypatch):
    monkeypatch.setattr(interrupts, "_last", [])
    assert interrupts.exit_code(KeyboardInterrupt()) == 130  # a plain Ctrl-C that never reached the handler
    with pytest.raises(interrupts.Interrupted) as caught:
        interrupts._handler(signal.SIGTERM, None)  # no run is measuring: it raises at once
    assert interrupts.exit_code(caught.value) == 143
    # Ray's ray.wait turns the handler's exception into a new, plain KeyboardInterrupt
    assert interrupts.exit_code(KeyboardInterrupt()) == 143
    with pytest.raises(interrupts.Interrupted):
        interrupts._handler(signal.SIGHUP, None)
    assert interrupts.exit_code(KeyboardInterrupt()) == 129

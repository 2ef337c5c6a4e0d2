"""The `advisor` command line: one group, each command in the module named for it (advisor_cli/<command>.py).

Shared flags live in `options.py` (declared once for bench, sweep and matrix). The command line is the
top floor, a package of its own above reports/ (docs/map.md): it may import every layer, and nothing
imports it.

Commands import their heavy dependencies (torch, engines) only when they run,
so `advisor --help` is instant. Every user error ends in a one-line message
that names the fix and a non-zero exit, never a traceback (set ADVISOR_DEBUG=1
to see one).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from advisor import __version__

# Every sub-command, one module each under advisor_cli/ (attached to the main group in this order).
_COMMANDS = ("bench", "sweep", "matrix", "show", "scenarios", "engines", "models", "generate", "verify", "recommend",
             "estimate", "hardware", "report", "compare", "dashboard", "selftest", "embed", "rag")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="advisor")
def cli() -> None:
    """Benchmark inference engines on your traffic and choose engine, hardware and cost with measurements.

    \b
    Start here:
      advisor bench --scenario copilot        # own_engine on CPU, built-in tiny model
      advisor scenarios                       # the traffic scenarios
      advisor engines                         # which engines can run here, and how to add the others
      advisor models create my-model --preset small-100m
    """


def _attach() -> None:
    for name in _COMMANDS:
        module = importlib.import_module(f"advisor_cli.{name}")
        cmd = next(v for k, v in vars(module).items() if isinstance(v, click.Command) and v.name == name
                   and not k.startswith("_"))
        cli.add_command(cmd)


_attach()


def _interrupted(e: Any) -> NoReturn:
    from advisor.run import interrupts
    from advisor.run.bench import RunInterrupted
    from advisor.sweep.run import SweepInterrupted

    if isinstance(e, interrupts.SaveDropped):
        click.echo(f"interrupted by {e.name}: the save of {e.what} was dropped (a signal within "
                   f"{interrupts.GRACE_S:g} s of a waiting one forced the exit); nothing of it was written", err=True)
        sys.exit(e.exit_code)
    saved = ""
    if isinstance(e, RunInterrupted) and e.result.path:
        whole = e.result.loadgen.interrupted is None  # the signal came after the measurement: the run is whole
        saved = f"; {'run' if whole else 'partial run'} saved: {e.result.path}"
    click.echo(f"interrupted by {e.name}{saved}", err=True)
    if isinstance(e, SweepInterrupted):
        click.echo(e.resume_text(), err=True)
    sys.exit(e.exit_code)


def main() -> None:
    from advisor.run import interrupts

    interrupts.install()  # SIGINT, SIGTERM and SIGHUP: save what was measured, stop engines and servers
    try:
        rv = cli.main(standalone_mode=False)  # without standalone mode, `ctx.exit(n)` comes back as a value
    except click.exceptions.Abort as e:  # click turns a KeyboardInterrupt (and so Interrupted) into Abort
        if isinstance(e.__cause__, interrupts.Interrupted):
            _interrupted(e.__cause__)
        click.echo("aborted", err=True)
        sys.exit(130)
    except interrupts.Interrupted as e:
        _interrupted(e)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as e:
        if os.environ.get("ADVISOR_DEBUG"):
            raise
        # Our user-facing errors (bad scenario, engine unavailable, missing model...) are
        # ValueError/RuntimeError/OSError subclasses whose message already names the fix.
        if isinstance(e, ValueError | RuntimeError | OSError):
            click.echo(f"error: {e}", err=True)
        else:
            click.echo(f"error: {type(e).__name__}: {e}\n(a bug: set ADVISOR_DEBUG=1 for the traceback and report it)",
                       err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)

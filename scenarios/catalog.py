"""Find and load scenarios: shipped ones by name, any other YAML file by path.

`load_scenario("copilot")` loads the shipped `scenarios/copilot.yaml`; a
string with a `/` or ending in `.yaml`/`.yml` is a path. Every problem is a
one-line `ScenarioError` that says what is wrong and how to fix it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scenarios.errors import ScenarioError
from scenarios.spec import Scenario
from scenarios.yaml_file import YamlFileError, read_yaml

__all__ = ["ScenarioError", "SCENARIO_DIR", "load_scenario", "list_scenarios", "scenario_names",
           "scenario_from_dict"]

SCENARIO_DIR = Path(__file__).resolve().parent


def scenario_names() -> list[str]:
    """Names of the shipped scenarios, sorted."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def list_scenarios() -> list[Scenario]:
    """Every shipped scenario, sorted by name."""
    return [load_scenario(n) for n in scenario_names()]


def _is_path(name_or_path: str) -> bool:
    return "/" in name_or_path or "\\" in name_or_path or name_or_path.endswith((".yaml", ".yml"))


LOG_SUFFIXES = (".csv", ".jsonl", ".tsv", ".log")  # request logs (`advisor scenarios fit`); .json may be a scenario


def _log_hint(name_or_path: str | Path) -> str | None:
    """For a request log given where a scenario belongs: the command that turns it into one."""
    p = Path(name_or_path)
    suffixes = [x.lower() for x in p.suffixes if x.lower() != ".gz"]
    if not suffixes or suffixes[-1] not in LOG_SUFFIXES or not p.expanduser().is_file():
        return None
    return (f"{p} is a request log, not a scenario YAML; make a scenario from it with `advisor scenarios fit {p} "
            f"-o my-traffic.yaml`, then `advisor bench --scenario my-traffic.yaml`")


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A shipped scenario by name, or a scenario YAML file by path."""
    if (hint := _log_hint(name_or_path)) is not None:
        raise ScenarioError(hint)
    if isinstance(name_or_path, Path) or _is_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            what = "is a folder, not a file" if path.is_dir() else "does not exist"
            raise ScenarioError(f"scenario file {path} {what}; give an existing YAML file "
                                f"or a shipped name ({', '.join(scenario_names())})")
    else:
        path = SCENARIO_DIR / f"{name_or_path}.yaml"
        if not path.is_file():
            raise ScenarioError(f"unknown scenario '{name_or_path}'; choose one of {', '.join(scenario_names())} "
                                "or give the path of a YAML file")
    try:
        data = read_yaml(path)  # UTF-8, duplicate keys refused, the file named in every error
    except YamlFileError as e:
        raise ScenarioError(f"scenario file {e}") from None
    return scenario_from_dict(data, base_dir=path.resolve().parent, origin=str(path))


def scenario_from_dict(data: Any, *, base_dir: Path | None = None, origin: str = "scenario") -> Scenario:
    """Validate a parsed scenario; relative trace files resolve against `base_dir`."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{origin}: a scenario must be a YAML mapping (name, description, workload, "
                            f"arrival, ...), got {type(data).__name__}")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(f"{origin}: {_describe(e)}") from None
    return scenario.with_base_dir(base_dir)


def _describe(e: ValidationError) -> str:
    """One line per problem: field path, what is wrong, the value given."""
    parts = []
    for err in e.errors():
        # drop pydantic's union-tag steps (e.g. 'poisson') so the path reads like the YAML
        loc = ".".join(str(x) for i, x in enumerate(err["loc"]) if not (i and _is_tag(err["loc"][i - 1], x)))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):  # a model / a dataclass (fit)
            parts.append(f"unknown key '{loc}' (check its spelling; docs/scenarios.md lists the keys)")
        elif err["type"] == "missing":
            parts.append(f"{loc} is missing")
        elif err["type"] == "value_error":  # our own validators: the message names the values
            parts.append(f"{loc or 'scenario'}: {msg}")
        else:
            parts.append(f"{loc or 'scenario'}: {msg}, got {err.get('input')!r}")
    return "; ".join(parts)


_TAGS = {"fixed", "uniform", "lognormal", "empirical", "constant", "poisson", "gamma", "onoff", "profile", "closed",
         "offline", "trace"}


def _is_tag(parent: object, x: object) -> bool:
    return parent in ("input", "output", "arrival", "turns", "first_tokens", "new_tokens") and x in _TAGS

"""One redaction for every file advisor writes: result.json, sweep.json, matrix.json, logs and reports.

`redact_text` hides, in any text:
- credentials in URLs (`http://user:PASSWORD@host` -> `http://***@host`);
- values of secret-looking names: `HF_TOKEN=...`, `--api-key sk-...`, `--hf-token=...`, `"api_key": "..."`;
- every secret this process was told about (`remember`): the parts of a `--url`'s credentials, and the
  values of secret-looking environment variables (the API key a server is called with), wherever they appear.

Secret-looking names contain key, token (not tokens or tokenizer), secret, password or auth.
"""

from __future__ import annotations

import os
import re
import urllib.parse

HIDDEN = "REDACTED"
_NAME = r"[A-Za-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|auth)(?![a-z])[A-Za-z0-9_.-]*"
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/\s@\"'<>]+)@")
_ASSIGN = re.compile(rf"(?P<name>\b{_NAME})=(?P<value>[^\s\"'&]+)", re.IGNORECASE)
_FLAG = re.compile(rf"(?P<flag>--{_NAME})(?P<sep>\s+|\\?\"?\s*,\s*\\?\"?)(?P<value>[^\s\"'\\,\]-][^\s\"'\\,\]]*)",
                   re.IGNORECASE)
_JSON_FIELD = re.compile(rf"(?P<name>\"{_NAME}\"\s*:\s*\")(?P<value>[^\"]+)\"", re.IGNORECASE)
_NOT_SECRET_FIELDS = {"api_key_env"}  # names of variables, not their values
_MIN_LEN = 6  # shorter "secrets" would hide ordinary words

_remembered: set[str] = set()


def remember(secret: str | None) -> None:
    """A secret to hide wherever it appears in what advisor writes from now on."""
    if secret and len(secret) >= _MIN_LEN:
        _remembered.add(secret)


def remember_url(url: str | None) -> None:
    """The credentials of a URL (`http://user:password@host`)."""
    if not url:
        return
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return
    for s in (parts.password, parts.username):
        if s:
            remember(urllib.parse.unquote(s))
            remember(s)


def _environment() -> set[str]:
    return {v for k, v in os.environ.items() if re.fullmatch(_NAME, k, re.IGNORECASE) and len(v) >= _MIN_LEN}


def redact_text(text: str) -> str:
    """`text` with every secret hidden (see the module's docstring)."""
    if not text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}***@", text)
    text = _ASSIGN.sub(lambda m: f"{m['name']}={HIDDEN}", text)
    text = _FLAG.sub(lambda m: f"{m['flag']}{m['sep']}{HIDDEN}", text)
    text = _JSON_FIELD.sub(lambda m: m[0] if m["name"].strip('"').split('"')[0] in _NOT_SECRET_FIELDS
                           else f"{m['name']}{HIDDEN}\"", text)
    for secret in sorted(_remembered | _environment(), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


def remember_command(command: str | None) -> None:
    """The secret values of a launch command line (`HF_TOKEN=x`, `--api-key x`, `--hf-token=x`)."""
    if not command:
        return
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, w in enumerate(words):
        name, eq, value = w.partition("=")
        if eq and re.fullmatch(rf"-*{_NAME}", name, re.IGNORECASE):
            remember(value)
        elif w.startswith("--") and re.fullmatch(rf"--{_NAME}", w, re.IGNORECASE) and i + 1 < len(words):
            remember(words[i + 1])


def remember_options(options: dict) -> None:
    """The secrets in an engine's options (`url`, `launch`)."""
    for k, v in (options or {}).items():
        if isinstance(v, str) and k == "url":
            remember_url(v)
        elif isinstance(v, str) and k == "launch":
            remember_command(v)

"""The selftest's HTML page: one self-contained file, a verdict line, then each check in words with its figures."""

from __future__ import annotations

import json
from typing import Any

import jinja2

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>advisor selftest ({{ doc.device }})</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; max-width: 1000px; margin: 2em auto; padding: 0 1em; color: #222; }
.pass { color: #17693a; } .fail { color: #b42318; } .warn { color: #9a6700; } .na { color: #667; }
table { border-collapse: collapse; width: 100%; } td, th { border-bottom: 1px solid #ddd; padding: .4em; text-align: left;
vertical-align: top; } details pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; }
</style></head><body>
<h1>advisor selftest: <span class="{{ 'pass' if doc.passed else 'fail' }}">
{%- if doc.interrupted_by %}interrupted ({{ doc.interrupted_by }}){% elif doc.passed %}every check passed
{%- else %}{{ doc.failed | length }} check(s) failed{% endif %}</span></h1>
<p>Device <b>{{ doc.device }}</b>{% if doc.environment.gpu %} ({{ doc.environment.gpu }}){% endif %},
{{ doc.environment.hardware.cpu_model }}, torch {{ doc.environment.software.packages.torch }},
{{ doc.seconds }} s{% if doc.quick %}, quick mode{% endif %}; written {{ doc.created_utc }}.</p>
{% if doc.failed %}<h2>What failed</h2><ul>{% for f in doc.failed %}<li class="fail">{{ f }}</li>{% endfor %}</ul>{% endif %}
<h2>Checks</h2>
<table><tr><th>check</th><th>status</th><th>what it found</th><th>s</th></tr>
{% for c in doc.checks %}<tr><td>{{ c.title }}</td>
<td class="{{ 'na' if c.status == 'n/a' else c.status }}"><b>{{ c.status }}</b></td>
<td>{{ c.summary }}<details><summary>figures</summary><pre>{{ figures(c.figures) }}</pre></details></td>
<td>{{ c.seconds }}</td></tr>{% endfor %}
</table>
<p>The same figures are in selftest.json beside this page. Served runs are saved under runs/
(<code>advisor show RUN</code>).</p>
</body></html>
"""


def render(doc: dict[str, Any]) -> str:
    """The page for a selftest JSON document (advisor.selftest.run.document)."""
    env = jinja2.Environment(autoescape=True, undefined=jinja2.ChainableUndefined)
    template = env.from_string(_TEMPLATE)
    return template.render(doc=doc, figures=lambda f: json.dumps(f, indent=2, default=str))

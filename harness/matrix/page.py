"""``clients.html`` (pure): the conformance matrix as one self-contained page.

Matrix in, text out: a table of client x scenario family with the grade counts of each cell
(coloured by its worst grade, the worst diagnosis underneath), then each client's failures with
their replay commands. Autoescaped, no scripts, no external resources.
"""

from __future__ import annotations

import jinja2

from harness.matrix.grid import COLUMNS, UNGRADED, Cell, Matrix

SHORT = {"strict": "S", "non-strict": "N", "failed": "F", "informational": "I", UNGRADED: "U"}
_WORST_FIRST = ("failed", "non-strict", "informational", UNGRADED, "strict")

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tearline clients</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: .35em .5em; vertical-align: top; text-align: left; }
th { background: #f4f4f4; }
td.cell { min-width: 9em; }
.failed { background: #fde2e1; } .non-strict { background: #fff4d6; }
.informational { background: #e8f0fe; } .strict { background: #e6f4ea; }
.ungraded { background: #eee; } .none { color: #aaa; }
.worst { display: block; font-size: 12px; color: #555; max-width: 28em; }
code { font-size: 12px; word-break: break-all; }
.legend span { padding: 0 .4em; margin-right: .5em; }
</style></head><body>
<h1>tearline clients: conformance matrix</h1>
<p class="legend">{% for column in columns %}
<span class="{{ column }}">{{ short[column] }} {{ column }}</span>{% endfor %}</p>
{% if command %}<p>run: <code>{{ command }}</code></p>{% endif %}
<table>
<tr><th>client</th><th>version</th><th>total</th>
{% for family in families %}<th>{{ family }}</th>{% endfor %}</tr>
{% for row in rows %}<tr>
<th>{{ row.adapter }}</th><td>{{ row.client }} {{ row.version }}</td>
<td class="cell {{ worst(row.totals) }}">{{ counts(row.totals) }}</td>
{% for family in families %}{% set cell = cell_of(row, family) %}{% if cell %}
<td class="cell {{ worst(cell.counts) }}">{{ counts(cell.counts) }}
{% if cell.worst %}<span class="worst">{{ cell.worst_case }}: {{ cell.worst }}</span>
{% endif %}</td>
{% else %}<td class="none">-</td>{% endif %}{% endfor %}
</tr>{% endfor %}
</table>
{% if skipped %}<h2>Skipped</h2><ul>
{% for s in skipped %}<li>{{ s.adapter }}: {{ s.note }}</li>{% endfor %}
</ul>{% endif %}
{% for row in rows %}{% if row.failures %}
<details><summary>{{ row.adapter }}: {{ row.failures | length }} failed or ungraded
case(s)</summary>
<table><tr><th>case</th><th>outcome</th><th>grade</th><th>diagnosis</th><th>replay</th></tr>
{% for f in row.failures %}<tr><td>{{ f.case_id }}</td><td>{{ f.outcome }}</td>
<td class="{{ f.grade }}">{{ f.grade }}</td><td>{{ f.diagnosis }}</td>
<td><code>{{ f.replay }}</code></td></tr>
{% endfor %}</table></details>
{% endif %}{% endfor %}
</body></html>
"""

_ENV = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def counts_text(counts: dict[str, int]) -> str:
    """``S 12 · N 3 · F 1`` (zeros left out; ``-`` when empty)."""
    parts = [f"{SHORT[c]} {counts[c]}" for c in COLUMNS if counts.get(c)]
    return " \u00b7 ".join(parts) or "-"


def worst_column(counts: dict[str, int]) -> str:
    return next((c for c in _WORST_FIRST if counts.get(c)), "none")


def render(matrix: Matrix) -> str:
    cells = {(row.adapter, cell.family): cell for row in matrix.rows for cell in row.cells}

    def cell_of(row: object, family: str) -> Cell | None:
        return cells.get((getattr(row, "adapter", ""), family))

    return _ENV.from_string(TEMPLATE).render(
        rows=matrix.rows,
        families=matrix.families,
        skipped=matrix.skipped,
        columns=COLUMNS,
        short=SHORT,
        command=" ".join(matrix.command),
        counts=counts_text,
        worst=worst_column,
        cell_of=cell_of,
    )

"""The offline HTML report of a run: leaderboard, learning curve, lessons and per-event outcomes.

Owns rendering one self-contained ``report.html``: inline CSS and SVG charts drawn here, no
script, no font or CDN, so it opens from a file with the network off; and the charts' layout:
a staffer's colour (the same in every report), text measured so that a legend is never cut
and point labels never overlap. It renders the numbers of the metrics, recovery and
arm_lessons modules; it computes none of its own.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any, cast

from agentlake.scenarios.metrics import (
    SCORE_FORMULA,
    CurvePoint,
    batches_of,
    curves_by_feedback,
    event_outcomes,
    leaderboard,
    learning_curve,
    learning_curve_points,
    per_batch,
    staffers_in_order,
)
from agentlake.scenarios.recovery import recovery_by_arm
from agentlake.scenarios.results import FORMAT_VERSION, REPORT_FILE, EventResult

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
HIDDEN_RULES = ("required_certification", "min_reliability", "max_distance_miles", "exclude_prior_no_show")


def _hidden(rule: str) -> bool:
    """A client's unwritten rule (every ``min_<score>`` is one), as opposed to the order's terms."""
    return rule in HIDDEN_RULES or rule.startswith("min_")


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#1b1f24;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.meta{color:#57606a;margin:0 0 12px}.note{color:#57606a;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0 10px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:right}th{background:#f6f8fa}
td.l,th.l{text-align:left}tr.best td{background:#eef8f0}td{white-space:nowrap}th{font-size:12px;font-weight:600;vertical-align:bottom}
.wide{overflow-x:auto}
td.wrap{white-space:normal;min-width:22em;max-width:46em}h3{font-size:14.5px;margin:18px 0 4px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:middle}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
.chart{border:1px solid #d0d7de;border-radius:6px;padding:8px;margin:6px 0;overflow-x:auto}
"""


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _interval(point: CurvePoint) -> str:
    return f"{100 * point.low:.0f}-{100 * point.high:.0f}%"


def _colour(fraction: float) -> str:
    """Red (0) -> amber (0.5) -> green (1)."""
    stops = [(0.0, (215, 48, 39)), (0.5, (253, 204, 92)), (1.0, (26, 152, 80))]
    fraction = min(1.0, max(0.0, fraction))
    for (x0, c0), (x1, c1) in zip(stops, stops[1:], strict=False):
        if fraction <= x1:
            t = (fraction - x0) / (x1 - x0)
            return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(c0, c1, strict=True))
    return "#1a9850"


# Advance widths, in thousandths of an em, of printable ASCII (space to ~): the larger of DejaVu
# Sans and Liberation Sans (Arial's metrics), the widest sans fonts system-ui falls back to;
# any other character counts a whole em. A box sized from them holds its text whatever font
# the reader's system draws it in.
_ASCII_WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636,
    636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 556, 1015, 684, 686, 722, 770, 667, 611, 778,
    752, 295, 500, 667, 557, 863, 748, 787, 667, 787, 722, 667, 611, 732, 684, 989, 685, 667, 685, 390,
    337, 390, 838, 556, 500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,
    635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,
)  # fmt: skip


def text_width(text: str, size: float) -> float:
    """The width in pixels of ``text`` at font size ``size``, at most (see ``_ASCII_WIDTHS``)."""
    units = sum(_ASCII_WIDTHS[ord(c) - 32] if " " <= c <= "~" else 1000 for c in text)
    return size * units / 1000


# Staffers' line colours: Okabe-Ito without its yellow, too pale for a line on white.
STAFFER_PALETTE = PALETTE[:7]
# Series of one colour (a staffer's arms under several feedback modes, or two staffers of one
# colour) are told apart by their dash, given in the order of their names.
_DASHES = ("", "7 4", "2 3", "9 3 2 3", "1 5")


def staffer_colour(staffer: str, pinned: str | None = None) -> str:
    """The staffer's colour in every report: ``pinned`` (its profile's ``colour``) if given,
    else one of ``STAFFER_PALETTE`` chosen by a hash of its name (sha256: the same in every
    process, unlike ``hash``), so a staffer looks the same in every run's report."""
    if pinned:
        return pinned
    digest = hashlib.sha256(staffer.encode("utf-8")).digest()
    return STAFFER_PALETTE[int.from_bytes(digest[:4], "big") % len(STAFFER_PALETTE)]


def series_styles(
    staffer_of: Mapping[str, str], pinned: Mapping[str, str | None] | None = None
) -> dict[str, tuple[str, str]]:
    """``(colour, dash)`` of each arm (``staffer_of``: arm -> staffer; ``pinned``: staffer ->
    its profile's colour): the staffer's colour, and a dash for every arm after the first
    (by name) of the same colour."""
    styles: dict[str, tuple[str, str]] = {}
    taken: dict[str, int] = defaultdict(int)
    for arm in sorted(staffer_of):
        colour = staffer_colour(staffer_of[arm], (pinned or {}).get(staffer_of[arm]))
        styles[arm] = (colour, _DASHES[taken[colour] % len(_DASHES)])
        taken[colour] += 1
    return styles


def spread(wanted: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Positions as near ``wanted`` as they can be, in the same order, every two at least
    ``gap`` apart; within ``[low, high]`` when they fit there (they keep ``gap`` if not)."""
    order = sorted(range(len(wanted)), key=lambda i: (wanted[i], i))
    placed = list(wanted)
    previous: float | None = None
    for i in order:  # down: each at least gap below the one above
        placed[i] = max(placed[i], low) if previous is None else max(placed[i], previous + gap)
        previous = placed[i]
    following: float | None = None
    for i in reversed(order):  # back up from the bottom, keeping the gap
        placed[i] = min(placed[i], high) if following is None else min(placed[i], following - gap)
        following = placed[i]
    return placed


_LABEL_SIZE, _LABEL_GAP = 11, 15  # an 11px label's box is under 13px tall
_LEGEND_SIZE, _LEGEND_ROW = 12, 20


def learning_curve_svg(
    points: Mapping[str, Sequence[CurvePoint]],
    batches: Sequence[int],
    styles: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """Fill rate (0-100%) per batch, one line per arm, each point with its 95% interval.

    Only each line's last point is labelled, right of the plot, the labels spread so that no
    two overlap; every point's value and interval are in its tooltip and the per-batch table.
    The legend's width is measured from its text (``text_width``), so it is never cut.
    ``styles``: ``series_styles``; by default each arm's own name picks its colour.
    """
    styles = styles or series_styles({arm: arm for arm in points})
    arms = list(points)
    gains = {arm: 100 * (pts[-1].fill_rate - pts[0].fill_rate) if pts else 0.0 for arm, pts in points.items()}
    legend = {arm: f"{arm} ({gains[arm]:+.0f} pts)" for arm in arms}
    left, top, bottom, inset, plot_w = 56, 20, 44, 28, 504
    plot_h = max(276, _LABEL_GAP * len(arms) + 12, _LEGEND_ROW * len(arms))
    height = top + plot_h + bottom
    n = max(1, len(batches))
    # Arms' points sit side by side at each batch, so equal values and intervals stay apart.
    step = min(5.0, 20.0 / max(1, len(arms) - 1))

    def x(i: int, s: int | None = None) -> float:
        base = left + inset + ((plot_w - 2 * inset) * i / (n - 1) if n > 1 else (plot_w - 2 * inset) / 2)
        return base if s is None else base + (s - (len(arms) - 1) / 2) * step

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    label_x = x(n - 1) + 10 + step * (len(arms) - 1) / 2 + 6
    labels = {arm: f"{100 * pts[-1].fill_rate:.0f}%" for arm, pts in points.items() if pts}
    legend_x = label_x + max((text_width(t, _LABEL_SIZE) for t in labels.values()), default=0) + 24
    legend_w = max((text_width(t, _LEGEND_SIZE) for t in legend.values()), default=0)
    width = round(legend_x + 28 + legend_w + 12)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="Learning curve: fill rate per batch per staffer, with 95% intervals">'
    ]
    for tick in range(0, 101, 20):
        ty = y(tick / 100)
        parts.append(f'<line x1="{left}" y1="{ty:.1f}" x2="{left + plot_w}" y2="{ty:.1f}" stroke="#e5e7eb"/>')
        parts.append(
            f'<text x="{left - 8}" y="{ty + 4:.1f}" font-size="12" text-anchor="end" fill="#57606a">{tick}%</text>'
        )
    for i, batch in enumerate(batches):
        parts.append(
            f'<text x="{x(i):.1f}" y="{top + plot_h + 18}" font-size="12" text-anchor="middle" fill="#57606a">batch {batch}</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#57606a"/>'
    )
    parts.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" font-size="12" fill="#57606a" transform="rotate(-90 14 {top + plot_h / 2:.1f})" text-anchor="middle">fill rate</text>'
    )
    column = {batch: i for i, batch in enumerate(batches)}
    ends: dict[str, tuple[float, float]] = {}
    for s, arm in enumerate(arms):
        colour, dash = styles[arm]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        mine = [(x(column[p.batch], s), p) for p in points[arm] if p.batch in column]
        if not mine:
            continue
        line = " ".join(f"{px:.1f},{y(p.fill_rate):.1f}" for px, p in mine)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2.5"{dashed}/>')
        for px, p in mine:
            lo, hi = y(p.low), y(p.high)
            parts.append(
                f'<path class="interval" d="M{px:.1f},{hi:.1f}V{lo:.1f}M{px - 3:.1f},{hi:.1f}h6M{px - 3:.1f},{lo:.1f}h6" stroke="{colour}" stroke-width="1.3" opacity="0.6" fill="none"/>'
            )
            tip = (
                f"{arm} batch {p.batch}: {_pct(p.fill_rate)} "
                f"(95% interval {_pct(p.low)}-{_pct(p.high)}, {p.events} events)"
            )
            parts.append(
                f'<circle cx="{px:.1f}" cy="{y(p.fill_rate):.1f}" r="4" fill="{colour}"><title>{escape(tip)}</title></circle>'
            )
        ends[arm] = (mine[-1][0], y(mine[-1][1].fill_rate))
    # Baselines sit about a third of the text's height below the point they label.
    wanted = [ends[arm][1] + 4 for arm in ends]
    for arm, baseline in zip(ends, spread(wanted, _LABEL_GAP, top + 10, top + plot_h + 2), strict=True):
        colour = styles[arm][0]
        px, py = ends[arm]
        if abs(baseline - 4 - py) > 2:  # moved off its point: a leader line shows whose it is
            parts.append(
                f'<line x1="{px + 5:.1f}" y1="{py:.1f}" x2="{label_x - 2:.1f}" y2="{baseline - 4:.1f}" stroke="{colour}" stroke-width="0.8"/>'
            )
        parts.append(
            f'<text class="point-label" x="{label_x:.1f}" y="{baseline:.1f}" font-size="{_LABEL_SIZE}" fill="{colour}">{labels[arm]}</text>'
        )
    for s, arm in enumerate(arms):
        colour, dash = styles[arm]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        ly = top + 14 + _LEGEND_ROW * s
        parts.append(
            f'<line x1="{legend_x:.1f}" y1="{ly - 4}" x2="{legend_x + 22:.1f}" y2="{ly - 4}" stroke="{colour}" stroke-width="2.5"{dashed}/>'
            f'<circle cx="{legend_x + 11:.1f}" cy="{ly - 4}" r="3.5" fill="{colour}"/>'
        )
        parts.append(
            f'<text class="legend-label" x="{legend_x + 28:.1f}" y="{ly + 1}" font-size="{_LEGEND_SIZE}" fill="#1b1f24">{escape(legend[arm])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def outcomes_svg(results: Sequence[EventResult]) -> str:
    """Per-event heat map: rows are scenario events, columns staffer x batch; cells filled/requested."""
    outcomes = event_outcomes(results)
    staffers, batches = staffers_in_order(results), batches_of(results)
    columns = [(s, b) for s in staffers for b in batches]
    rows = list(dict.fromkeys((o["scenario"], o["event_id"]) for o in outcomes))
    info = {(o["scenario"], o["event_id"]): o for o in outcomes}
    cell = {(o["staffer"], o["batch"], o["scenario"], o["event_id"]): o for o in outcomes}
    labels = {
        key: f"{key[0]} · {info[key]['at']} {key[1]} {info[key]['kind']} · {info[key]['role']}"
        for key in rows
    }
    longest = max((len(text) for text in labels.values()), default=20)
    label_w, cell_w, cell_h, head = int(16 + 6.4 * longest), 58, 22, 52
    width = label_w + cell_w * len(columns) + 10
    height = head + cell_h * len(rows) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="Per-event outcomes">'
    ]
    for c, (staffer, batch) in enumerate(columns):
        cx = label_w + c * cell_w + cell_w / 2
        if batch == batches[0]:
            span = cell_w * len(batches)
            sx = label_w + c * cell_w
            parts.append(
                f'<text x="{sx + span / 2:.1f}" y="16" font-size="12" font-weight="600" text-anchor="middle">{escape(staffer)}</text>'
            )
            parts.append(f'<line x1="{sx + 3}" y1="22" x2="{sx + span - 3}" y2="22" stroke="#57606a"/>')
        parts.append(
            f'<text x="{cx:.1f}" y="{head - 10}" font-size="11" text-anchor="middle" fill="#57606a">b{batch}</text>'
        )
    previous = None
    for r, key in enumerate(rows):
        ry = head + r * cell_h
        if previous is not None and previous != key[0]:
            parts.append(f'<line x1="0" y1="{ry}" x2="{width}" y2="{ry}" stroke="#8c959f"/>')
        previous = key[0]
        parts.append(f'<text x="4" y="{ry + 15}" font-size="11.5">{escape(labels[key])}</text>')
        for c, (staffer, batch) in enumerate(columns):
            x = label_w + c * cell_w
            found = cell.get((staffer, batch, key[0], key[1]))
            if found is None:
                parts.append(
                    f'<rect x="{x + 1}" y="{ry + 1}" width="{cell_w - 2}" height="{cell_h - 2}" fill="#f6f8fa"/>'
                )
                continue
            fraction = found["filled"] / found["requested"] if found["requested"] else 0.0
            tip = f"{staffer} batch {batch} {key[0]} {key[1]}: {found['filled']}/{found['requested']}"
            if found["rejections_by_rule"]:
                tip += " - rejected: " + ", ".join(
                    f"{k} x{v}" for k, v in found["rejections_by_rule"].items()
                )
            text_fill = "#ffffff" if fraction < 0.25 or fraction > 0.8 else "#1b1f24"
            mark = "*" if found["passed_any"] and not found["passed_all"] else ""
            parts.append(
                f'<rect x="{x + 1}" y="{ry + 1}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{_colour(fraction)}" rx="2"><title>{escape(tip)}</title></rect>'
            )
            parts.append(
                f'<text x="{x + cell_w / 2:.1f}" y="{ry + 15}" font-size="11" text-anchor="middle" fill="{text_fill}">{found["filled"]}/{found["requested"]}{mark}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def rejections_svg(results: Sequence[EventResult]) -> str:
    """Hidden-rule rejections per staffer and batch (grouped bars): what learning removes."""
    staffers, batches = staffers_in_order(results), batches_of(results)
    counts: dict[tuple[str, int, str], int] = defaultdict(int)
    for r in results:
        for x in r.rejections:
            counts[(r.arm, r.batch, x.rule)] += 1
    rules = [rule for rule in HIDDEN_RULES if any(counts[(s, b, rule)] for s in staffers for b in batches)]
    rules += sorted({k[2] for k in counts if _hidden(k[2]) and k[2] not in HIDDEN_RULES and counts[k]})
    rules += sorted({k[2] for k in counts if not _hidden(k[2]) and counts[k]})
    if not rules:
        return '<p class="note">The clients accepted every submitted worker.</p>'
    groups = [(s, b) for s in staffers for b in batches]
    bar_w, gap, left, top, plot_h = 14, 14, 44, 16, 170
    group_w = bar_w * len(rules) + gap
    width = left + group_w * len(groups) + 200
    height = top + plot_h + 56
    peak = max(counts.values()) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="Rejections by rule">'
    ]
    for frac in (0, 0.5, 1):
        ty = top + plot_h * (1 - frac)
        parts.append(
            f'<line x1="{left}" y1="{ty:.1f}" x2="{left + group_w * len(groups)}" y2="{ty:.1f}" stroke="#e5e7eb"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{ty + 4:.1f}" font-size="11" text-anchor="end" fill="#57606a">{round(peak * frac)}</text>'
        )
    for g, (staffer, batch) in enumerate(groups):
        gx = left + g * group_w + gap / 2
        for i, rule in enumerate(rules):
            value = counts[(staffer, batch, rule)]
            h = plot_h * value / peak
            colour = PALETTE[i % len(PALETTE)]
            parts.append(
                f'<rect x="{gx + i * bar_w:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 2}" height="{h:.1f}" fill="{colour}"><title>{escape(staffer)} b{batch} {rule}: {value}</title></rect>'
            )
        parts.append(
            f'<text x="{gx + bar_w * len(rules) / 2:.1f}" y="{top + plot_h + 14}" font-size="11" text-anchor="middle" fill="#57606a">b{batch}</text>'
        )
        if batch == batches[0]:
            parts.append(
                f'<text x="{gx + (group_w * len(batches) - gap) / 2:.1f}" y="{top + plot_h + 30}" font-size="11.5" font-weight="600" text-anchor="middle">{escape(staffer)}</text>'
            )
    lx = left + group_w * len(groups) + 16
    for i, rule in enumerate(rules):
        parts.append(
            f'<rect x="{lx}" y="{top + 18 * i}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}" rx="2"/>'
        )
        parts.append(f'<text x="{lx + 18}" y="{top + 18 * i + 10}" font-size="12">{escape(rule)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _recovery_section(recovery: Sequence[dict[str, Any]], learning: Sequence[dict[str, Any]]) -> str:
    """The hidden rules each learning arm recovered, per client, and what learning noted."""
    if not recovery and not any(item.get("notes") for item in learning):
        return ""
    totals = recovery_by_arm(recovery)
    arm_rows = [
        [
            arm,
            t["feedback"],
            t["exact"],
            t["too_strict"],
            t["too_loose"],
            t["missed"],
            t["spurious"],
            t["harmful"],
            _pct(t["pool_cost"]),
        ]
        for arm, t in totals.items()
    ]
    client_rows = [
        [
            row["arm"],
            row["client_id"],
            "; ".join(
                f"{r['rule']} {r['truth']} -> {'/'.join(r['learned']) or '-'} ({r['verdict'].replace('_', ' ')})"
                for r in row["rules"]
            )
            or "none",
            ", ".join(row["spurious"]) or "-",
            len(row["harmful"]),
            _pct(row["pool_cost"]),
        ]
        for row in recovery
    ]
    notes = list(
        dict.fromkeys(
            f"{item['staffer']} after batch {item['batch']}: {note}"
            for item in learning
            for note in item.get("notes", [])
        )
    )
    parts = ["<h2>Hidden rules recovered</h2>"]
    if recovery:
        parts.append(
            _table(
                [
                    "arm",
                    "feedback",
                    "exact",
                    "too strict",
                    "too loose",
                    "missed",
                    "spurious",
                    "harmful lessons",
                    "pool cost",
                ],
                arm_rows,
                left=2,
            )
        )
        parts.append(
            '<div class="wide">'
            + _table(
                [
                    "arm",
                    "client",
                    "hidden rule -> learned (verdict)",
                    "spurious filters",
                    "harmful",
                    "pool cost",
                ],
                client_rows,
                left=4,
            )
            + "</div>"
        )
        parts.append(
            '<p class="note">At the end of the run, the filters each learning arm\'s lessons apply to each '
            "client's orders, against the client's hidden rules on the run's candidate pools: exact (refuses "
            "the same workers), too strict (refuses some the client takes), too loose (admits some it refuses, "
            "or missing from some orders), missed. Spurious: a filter for a rule the client does not have. "
            "Harmful: a lesson that alone leaves out a worker the client would take. Pool cost: workers the "
            "client would take that the learned filters leave out, over all of them. Role synonyms are not "
            "filters and are not counted.</p>"
        )
    if notes:
        parts.append(
            "<h3>What learning set aside</h3><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
        )
    return "\n".join(parts)


def _table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    left: int = 1,
    highlight_first: bool = False,
    wrap: Collection[int] = (),
) -> str:
    """A table; the first ``left`` columns align left, the ``wrap`` columns wrap their text."""

    def cls(i: int) -> str:
        return " ".join(name for name, on in (("l", i < left or i in wrap), ("wrap", i in wrap)) if on)

    head = "".join(f'<th class="{cls(i)}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = []
    for n, row in enumerate(rows):
        best = ' class="best"' if highlight_first and n == 0 else ""
        cells = "".join(
            f'<td class="{cls(i)}">{v if isinstance(v, _Raw) else escape(str(v))}</td>'
            for i, v in enumerate(row)
        )
        body.append(f"<tr{best}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


class _Raw(str):
    """Already-escaped HTML for a table cell."""


def _learned_when(lesson: Mapping[str, Any]) -> _Raw:
    at = str(lesson.get("created_at") or "")
    moment = at[:19].replace("T", " ") + " UTC" if at else "?"
    batch = lesson.get("learned_after_batch")
    shown = f"after batch {batch}" if batch is not None else moment
    return _Raw(f'<span title="{escape(moment)}">{escape(shown)}</span>')


def _effect(lesson: Mapping[str, Any]) -> str:
    mean, runs = lesson.get("mean_effect"), lesson.get("measured_runs") or 0
    if mean is None or not runs:
        return "not measured"
    return f"{mean:+.3f} over {runs} run{'s' if runs != 1 else ''}"


def _lessons_section(lessons: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """The lessons each learning arm ended the run with (``arm_lessons``' records)."""
    if not lessons:
        return ""
    parts = ["<h2>What each learning arm learned</h2>"]
    for arm, items in lessons.items():
        counts: dict[str, int] = defaultdict(int)
        for item in items:
            counts[str(item.get("status"))] += 1
        tally = ", ".join(f"{n} {status}" for status, n in counts.items())
        parts.append(f"<h3>{escape(arm)}: {len(items)} lesson{'s' if len(items) != 1 else ''}")
        parts.append(f" ({escape(tally)})</h3>" if items else "</h3>")
        if not items:
            parts.append('<p class="note">It ended the run with no lesson.</p>')
            continue
        rows = [
            [
                item.get("id", ""),
                f"{item.get('trigger', '')}: {item.get('action', '')}",
                _learned_when(item),
                item.get("evidence_count", 0),
                f"{item.get('helpful', 0)} / {item.get('harmful', 0)}",
                _effect(item),
                item.get("status", ""),
            ]
            for item in items
        ]
        parts.append(
            '<div class="wide">'
            + _table(
                [
                    "id",
                    "lesson (when: what to do)",
                    "learned",
                    "evidence",
                    "helpful / harmful runs",
                    "mean effect",
                    "status",
                ],
                rows,
                left=3,
                wrap={1},
            )
            + "</div>"
        )
    parts.append(
        '<p class="note">The lessons in each learning arm\'s own store at the end of the run, active first. '
        "Learned: after the batch whose learning created it. Evidence: the observations behind it. "
        "Helpful / harmful runs: runs given the lesson that did better / worse than comparable runs "
        "without it (same order shape); mean effect: their mean difference in fill rate, where one "
        "was measured.</p>"
    )
    return "\n".join(parts)


def render_report(
    results: Sequence[EventResult],
    *,
    plan: dict[str, Any] | None = None,
    title: str | None = None,
    learning: Sequence[dict[str, Any]] = (),
    recovery: Sequence[dict[str, Any]] = (),
    lessons: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> str:
    """The report's HTML text for ``results`` (``plan`` adds the run's settings to the header
    and its staffers' pinned colours; ``learning``, ``recovery`` and ``lessons``, the
    leaderboard document's, add what learning set aside, the hidden rules each learning arm
    recovered and the lessons each ended with)."""
    plan = plan or {}
    run_id = plan.get("run_id") or (results[0].run_id if results else "")
    batches = batches_of(results)
    curve = learning_curve(results)
    points = learning_curve_points(results)
    pinned = cast(
        "dict[str, str | None]",
        {p.get("staffer"): p.get("colour") for p in plan.get("staffers", []) if isinstance(p, dict)},
    )
    styles = series_styles({r.arm: r.staffer for r in results}, pinned)
    interval = {(arm, p.batch): p for arm, pts in points.items() for p in pts}
    board = leaderboard(results)
    board_rows = [
        [
            row.rank,
            _Raw(
                f'<span class="swatch" style="background:{styles[row.metrics.staffer][0]}"></span>'
                f"{escape(row.metrics.staffer)}"
            ),
            f"{row.metrics.score:.1f}",
            _pct(row.metrics.fill_rate),
            " > ".join(f"{100 * v:.0f}%" for v in curve.get(row.metrics.staffer, [])),
            f"{row.gain_points:+.1f}",
            _pct(row.metrics.pass_k),
            _pct(row.metrics.precision),
            f"{row.metrics.citations_per_run:.2f}",
            f"{row.metrics.turns_per_event:.1f}",
            f"{row.metrics.tokens_per_event:.0f}",
            f"{row.metrics.cost_usd:.4f}",
            f"{row.metrics.latency_ms_mean:.0f}",
            f"{row.metrics.rescues_succeeded}/{row.metrics.rescues_attempted}",
            f"{row.metrics.double_bookings_caught}/{row.metrics.double_bookings_submitted}",
            row.metrics.tiers or "-",
        ]
        for row in board
    ]
    batch_rows = [
        [
            m.staffer,
            m.batch,
            _pct(m.fill_rate),
            _interval(interval[(m.staffer, m.batch or 0)]),
            m.events,
            f"{m.filled}/{m.requested}",
            _pct(m.pass_k),
            _pct(m.precision),
            f"{m.citations_per_run:.2f}",
            f"{m.lessons_given_per_run:.2f}",
            m.errors,
        ]
        for m in per_batch(results)
    ]
    mode_rows = [
        [mode, staffer, " > ".join(f"{100 * v:.0f}%" for v in values)]
        for mode, curves in curves_by_feedback(results).items()
        for staffer, values in curves.items()
    ]
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    reps = max((r.repetition for r in results), default=0)
    title = title or f"agentlake run {run_id}"
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    meta = (
        f"{len(scenarios)} scenarios · {len(curve)} staffers · {len(batches)} batches · {reps} repetition(s) · "
        f"{len(results)} judged events · backend {escape(str(plan.get('backend', '?')))} · generated {generated}"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="agentlake-format-version" content="{FORMAT_VERSION}">
<title>{escape(title)}</title><style>{_CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p class="meta">{meta}</p>
<h2>Leaderboard</h2>
<div class="wide">{_table(["#", "staffer", "score", "fill rate", "fill rate by batch", "gain (pts)", "pass^k", "precision", "citations / run", "turns / event", "tokens / event", "cost $", "latency ms / event", "rescues ok / tried", "double-bookings caught / sent", "overseer tiers"], board_rows, left=2, highlight_first=True)}</div>
<p class="note">{escape(SCORE_FORMULA)}. Fill rate = workers accepted by the client / workers requested. pass^k = share of events solved in all k repetitions. Precision = accepted / submitted workers.</p>
<h2>Learning curve</h2>
<div class="chart">{learning_curve_svg(points, batches, styles)}</div>
<p class="note">Fill rate per batch, with its 95% Wilson score interval over the batch's judged events (an event's workers are judged together, so the event is the unit); the last batch's value is labelled, every point's is in its tooltip and in the per-batch table. Staffers with learning on learn the clients' unwritten rules from rejections between batches. A staffer keeps its colour in every report; its arms under other feedback modes are dashed.</p>
<h2>Learning curve per feedback mode</h2>
{_table(["feedback", "staffer", "fill rate by batch"], mode_rows, left=2)}
<p class="note">What the clients said when they refused someone: explicit (the rule and its value), vague (their own words, no rule, no number) or silent (accepted or not). Each staffer under each mode is its own arm, with its own lessons.</p>
{_recovery_section(recovery, learning)}
{_lessons_section(lessons or {})}
<h2>Per batch</h2>
{_table(["staffer", "batch", "fill rate", "95% interval", "events", "filled", "pass^k", "precision", "citations/run", "lessons given/run", "errors"], batch_rows, left=1)}
<h2 id="per-event">Per-event outcomes</h2>
<div class="chart">{outcomes_svg(results)}</div>
<p class="note">Workers filled / requested, summed over repetitions; hover a cell for the client's rejections. * = solved in some but not all repetitions.</p>
<h2>Client rejections by rule</h2>
<div class="chart">{rejections_svg(results)}</div>
<p class="note">The hidden rules ({", ".join(HIDDEN_RULES)}) are never shown to staffers; they can only learn them from these rejections.</p>
<h2>Scenarios</h2>
<p>{escape(", ".join(scenarios))}</p>
</body></html>
"""


def write_report(
    run_dir: Path,
    results: Sequence[EventResult],
    *,
    plan: dict[str, Any] | None = None,
    learning: Sequence[dict[str, Any]] = (),
    recovery: Sequence[dict[str, Any]] = (),
    lessons: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> Path:
    """Write ``report.html`` into ``run_dir`` and return its path (see ``render_report``)."""
    path = run_dir / REPORT_FILE
    tmp = path.with_suffix(".html.tmp")
    html = render_report(results, plan=plan, learning=learning, recovery=recovery, lessons=lessons)
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(path)
    return path

"""The soak report: `report.json` (the plan, every sample, the verdicts) and a
self-contained `report.html` with a line plot (inline SVG) per measure."""

import html
import json
import os

WIDTH, HEIGHT, PAD, LEGEND = 820, 230, 48, 130
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def write(out, mode, plan, samples, verdicts, extra):
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"mode": mode, "plan": plan, "extra": extra, "verdicts": verdicts, "samples": samples}, f, indent=1)
    with open(os.path.join(out, "report.html"), "w") as f:
        f.write(page(mode, plan, samples, verdicts, extra))


def _process(key, scale=1.0):
    """A figure of a process's sample (None while the process is not there)."""
    def get(sample, name):
        figures = sample["processes"].get(name)
        return None if figures is None else key(figures) * scale if callable(key) else figures[key] * scale
    return get


def _backend(sample, key, scale=1.0, rows=False):
    figures = sample["backends"]
    value = None if figures is None else (figures["rows"] if rows else figures).get(key)
    return None if value is None else value * scale


def plots(samples):
    """(title, {series: [(t, value)]}) of every measure."""
    names = list(samples[-1]["processes"])
    per_process = [
        ("Resident memory (VmRSS, MiB)", _process("rss_kib", 1 / 1024)),
        ("Anonymous resident memory (RssAnon: heap and stacks, MiB)", _process("rss_anon_kib", 1 / 1024)),
        ("Heap in use (glibc mallinfo2, MiB)", _process("heap_in_use_kib", 1 / 1024)),
        ("Heap free inside the allocator's arenas (MiB)", _process("heap_free_kib", 1 / 1024)),
        ("Open file descriptors", _process("fds")),
        ("Threads", _process("threads")),
        ("Work directories (renders, conversions, template media)",
         _process(lambda p: sum(n for kind, n in p["work"].items() if kind != "preview"))),
        ("Preview source directories (a cache of at most 8)", _process(lambda p: p["work"]["preview"])),
        ("Files in the process's TMPDIR", _process("tmp_files")),
    ]
    out = [(title, {n: [(s["t"], get(s, n)) for s in samples] for n in names}) for title, get in per_process]
    caches = sorted({(n, c) for s in samples for n, p in s["processes"].items() if p for c in p.get("caches", {})})
    if caches:
        held = lambda s, n, c: ((s["processes"].get(n) or {}).get("caches", {}).get(c) or {}).get("held")
        out.append(("Bytes each cache holds (MiB; bounds in the verdict)",
                    {f"{n} {c}": [(s["t"], None if held(s, n, c) is None else held(s, n, c) / 2**20) for s in samples]
                     for n, c in caches}))

    def backend(*keys, scale=1.0, rows=False):
        return {k: [(s["t"], _backend(s, k, scale, rows)) for s in samples] for k in keys}

    last = next(s["backends"] for s in reversed(samples) if s["backends"])
    busiest = sorted(last["rows"], key=lambda t: -last["rows"][t])[:6]
    out += [
        ("Outbox rows, queued messages, dead letters", backend("outbox", "queued", "dead_letters")),
        ("Rows of the busiest tables", backend(*busiest, rows=True)),
        ("Database and WAL (MiB; PostgreSQL's WAL is the whole server's)",
         backend("db_bytes", "wal_bytes", scale=1 / 2**20)),
        ("Blobs", backend("blobs")),
        ("Blob bytes (MiB)", backend("blob_bytes", scale=1 / 2**20)),
    ]
    if "redis_keys" in last:
        out += [("Redis keys of the namespace", backend("redis_keys")),
                ("Redis server memory (MiB; the whole server's)", backend("redis_used_memory", scale=1 / 2**20))]
    return out


def svg(title, series, plan):
    points = [(t, v) for line in series.values() for t, v in line if v is not None]
    if not points:
        return ""
    t1 = max(plan["end"], max(t for t, _ in points)) or 1
    lo, hi = min(0, min(v for _, v in points)), max(v for _, v in points)
    hi = hi if hi > lo else lo + 1
    x = lambda t: PAD + (WIDTH - PAD - LEGEND) * t / t1
    y = lambda v: HEIGHT - PAD + (2 * PAD - HEIGHT) * (v - lo) / (hi - lo)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
             f'aria-label="{html.escape(title)}">',
             f'<rect x="{x(0):.1f}" y="{PAD / 2}" width="{x(plan["warmup_end"]) - x(0):.1f}" '
             f'height="{HEIGHT - 1.5 * PAD}" fill="#f2f2f2"/>',
             f'<line x1="{x(plan["load_end"]):.1f}" x2="{x(plan["load_end"]):.1f}" y1="{PAD / 2}" '
             f'y2="{HEIGHT - PAD}" stroke="#999" stroke-dasharray="4 3"/>',
             f'<text x="{PAD}" y="14" font-size="13" font-weight="bold">{html.escape(title)}</text>',
             f'<line x1="{PAD}" x2="{WIDTH - LEGEND}" y1="{y(lo):.1f}" y2="{y(lo):.1f}" stroke="#333"/>',
             f'<line x1="{PAD}" x2="{PAD}" y1="{PAD / 2}" y2="{HEIGHT - PAD}" stroke="#333"/>']
    for v in (lo, (lo + hi) / 2, hi):
        parts.append(f'<text x="{PAD - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.4g}</text>')
    for minute in range(0, int(t1 // 60) + 1, max(1, int(t1 // 600))):
        parts.append(f'<text x="{x(minute * 60):.1f}" y="{HEIGHT - PAD + 14}" font-size="10" '
                     f'text-anchor="middle">{minute}</text>')
    parts.append(f'<text x="{(WIDTH - LEGEND + PAD) / 2}" y="{HEIGHT - 10}" font-size="10" text-anchor="middle">minutes '
                 f'(grey: start-up and warm-up; dashed: load stops)</text>')
    for i, (name, line) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in line if v is not None)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>')
        parts.append(f'<text x="{WIDTH - LEGEND + 8}" y="{PAD / 2 + 12 * (i + 1)}" font-size="10" '
                     f'fill="{colour}">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def page(mode, plan, samples, verdicts, extra):
    rows = "".join(f'<tr><td class="{"pass" if v["ok"] else "fail"}">{"PASS" if v["ok"] else "FAIL"}</td>'
                   f'<td>{html.escape(v["resource"])}</td><td>{html.escape(v["text"])}</td></tr>' for v in verdicts)
    figures = "".join(f"<figure>{svg(title, series, plan)}</figure>" for title, series in plots(samples))
    facts = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v))}</td></tr>"
                    for k, v in {**plan, **extra}.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reelfarm soak, {mode} mode</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}} td,th{{padding:2px 8px;text-align:left;
vertical-align:top}} .pass{{color:#176b1c;font-weight:bold}} .fail{{color:#b00;font-weight:bold}}
figure{{margin:1em 0}}</style></head><body>
<h1>reelfarm soak, {mode} mode</h1>
<p>{len(samples)} samples every {plan['interval']} s. Verdicts measure after the warm-up (grey) and at the end,
once the load (up to the dashed line) stopped and its renders ended. Heap: glibc's statistics are
not readable from outside the process; RssAnon (anonymous resident memory) stands for it.</p>
<table>{rows}</table>
{figures}
<h2>Run</h2><table>{facts}</table>
</body></html>
"""

"""The figures docs/performance.md gives of a soak run, from its report.json: per process
and per backend at the load's start, after warm-up (10 minutes), at rest after it (in a
run that pauses there) and at the end of the load and of the run, each resource's growth
an hour after warm-up, each process's lowest heap in use and anonymous memory in every 5
minutes of load, and the verdicts as this checkout's verdict.py judges the samples (the
load test's own as the run recorded it).

    python3 tests/soak/table.py target/soak/embedded/report.json [target/soak/distributed/report.json]
"""

import json
import sys

import verdict


def at(samples, t):
    """The last sample taken at or before `t` (the first if none)."""
    before = [s for s in samples if s["t"] <= t]
    return before[-1] if before else samples[0]


def mib(n):
    return f"{n / 2**20:.1f}"


def process_cell(p):
    if not p:
        return "—"
    heap = p.get("heap_in_use_kib")
    heap = f" (heap {heap / 1024:.0f})" if heap is not None else ""
    return f"{p['rss_kib'] / 1024:.0f}{heap} MiB, {p['fds']} fds, {p['threads']} thr"


def backend_rows(b):
    rows = b["rows"]
    cells = {
        "database (MiB)": mib(b["db_bytes"]),
        "WAL (MiB)": mib(b["wal_bytes"]),
        "renders, jobs (rows)": f"{rows.get('renders', 0)}, {rows.get('jobs', 0)}",
        "handled messages, idempotency keys (rows)": f"{rows.get('handled_messages', 0)}, {rows.get('idempotency_keys', 0)}",
        "outbox, dead letters": f"{b['outbox']}, {b['dead_letters']}",
        "blobs (count, MiB)": f"{b['blobs']}, {mib(b['blob_bytes'])}",
    }
    if "queued" in b:
        cells["queued messages"] = str(b["queued"])
    if "redis_keys" in b:
        cells["Redis keys, server memory (MiB)"] = f"{b['redis_keys']}, {mib(b['redis_used_memory'])}"
    return cells


def table(report):
    plan, samples = report["plan"], report["samples"]
    times = [("load starts", plan["load_start"]), ("after warm-up", plan["warmup_end"]),
             ("load ends", plan["load_end"]), ("end", plan["end"])]
    if "pause" in plan:
        # The quiet spell after warm-up, where the `rss` verdict takes its first level.
        times.insert(2, ("at rest after warm-up", plan["pause"][1]))
    picked = [at(samples, t) for _, t in times]
    head = f"| {report['mode']} | " + " | ".join(f"{name} ({s['t'] / 60:.0f} min)" for (name, _), s in zip(times, picked))
    lines = [head + " |", "|---" * (len(times) + 1) + "|"]
    for name in samples[-1]["processes"]:
        lines.append(f"| {name} | " + " | ".join(process_cell(s["processes"].get(name)) for s in picked) + " |")
    with_backends = [s if s["backends"] else next(x for x in reversed(samples) if x["backends"]) for s in picked]
    cells = [backend_rows(s["backends"]) for s in with_backends]
    for key in cells[-1]:
        lines.append(f"| {key} | " + " | ".join(c.get(key, "—") for c in cells) + " |")
    return "\n".join(lines)


def per_hour(report):
    """Growth an hour of load after warm-up (and its pause), from the samples where the
    load resumed and where it ended."""
    plan, samples = report["plan"], report["samples"]
    resumed = plan["pause"][1] if "pause" in plan else plan["warmup_end"]
    a = next(s for s in samples if s["t"] >= resumed and s["backends"])
    b = next(s for s in reversed(samples) if s["t"] <= plan["load_end"] and s["backends"])
    hours = (b["t"] - a["t"]) / 3600
    grow = lambda f: (f(b["backends"]) - f(a["backends"])) / hours
    renders = grow(lambda x: x["rows"].get("renders", 0))
    prefixes = sorted(set(a["backends"]["blobs_by_prefix"]) | set(b["backends"]["blobs_by_prefix"]))
    blobs = ", ".join(f"{p} {grow(lambda x: x['blobs_by_prefix'].get(p, 0)):+.0f}" for p in prefixes)
    return (f"{report['mode']}: an hour of load after warm-up adds {renders:.0f} renders, "
            f"{grow(lambda x: x['db_bytes']) / 2**20:+.1f} MiB of database "
            f"({grow(lambda x: x['db_bytes']) / max(renders, 1) / 1024:.1f} KiB a render), "
            f"{grow(lambda x: x['blob_bytes']) / 2**20:+.1f} MiB of blobs "
            f"({grow(lambda x: x['blob_bytes']) / max(renders, 1) / 2**10:.0f} KiB a render; blobs by prefix {blobs})")


def floors(report):
    """Per process, the lowest heap in use and anonymous memory (MiB) and thread count in
    each 5 minutes of load (the pause after warm-up and the end left out): what a worker
    keeps between renders, which a leak raises, and how many renders' threads were always
    in flight, which raises it too."""
    plan, samples = report["plan"], report["samples"]
    lines = []
    for name in samples[-1]["processes"]:
        for key, what, scale, unit in (("heap_in_use_kib", "heap in use", 1024, " MiB"),
                                       ("rss_anon_kib", "RssAnon", 1024, " MiB"), ("threads", "threads", 1, "")):
            lowest, t = [], plan["load_start"]
            while t < plan["load_end"]:
                values = [s["processes"][name].get(key) for s in samples
                          if t <= s["t"] < t + 300 and s["processes"].get(name)
                          and s["phase"] in ("warm-up", "load")]
                values = [v for v in values if v is not None]
                if values:
                    lowest.append(f"{min(values) / scale:.0f}")
                t += 300
            lines.append(f"{report['mode']} {name}: lowest {what} per 5 min of load {', '.join(lowest)}{unit}")
    return "\n".join(lines)


def main():
    for path in sys.argv[1:]:
        with open(path) as f:
            report = json.load(f)
        print(table(report), end="\n\n")
        print(per_hour(report), end="\n\n")
        print(floors(report), end="\n\n")
        judged = verdict.check(report["samples"], report["plan"], report["extra"])
        for v in judged + [v for v in report["verdicts"] if v["resource"] == "load"]:
            print(f"- {'PASS' if v['ok'] else 'FAIL'} {v['resource']}: {v['text']}")
        print()


if __name__ == "__main__":
    main()

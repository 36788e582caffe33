"""The verdicts of a soak run: one line per resource, each passing or failing by a bound
stated in the line. `plan` holds the run's times (seconds from its start): `warmup_end`,
`load_end`, `end`, and `interval`, `slots`; in a run that judges memory also `pause`,
the quiet spell after warm-up (its start and end).

Warm-up ends 10 minutes into the load, or a third of the way for a run shorter than 30
minutes; what happened before (start-up, calibration, warm-up) sets the level the rest of
the run is held to."""

import math

RSS_GROWTH = 0.05
# Runs shorter than this report memory without judging it.
JUDGE_RSS_AFTER = 1800
# fds and threads move with the work in flight (connections, blocking-pool threads that
# end after 10 s idle): at the end they may exceed the warm-up's highest by this much.
COUNT_TOLERANCE = (4, 0.10)  # at least 4, else 10 %
# Tables whose rows stay with the work the load did (kept by design, pruned by the
# hourly housekeeping or the draft expiry), and at most how many rows one render may add.
KEPT_PER_RENDER = {
    "jobs": 1, "renders": 1, "projects": 1, "render_parts": 8, "deliveries": 2, "delivery_attempts": 4,
    "handled_messages": 12, "idempotency_keys": 1,
}
# Rows per upload (`work_used`: its conversion's attempts, kept an hour for the budget).
KEPT_PER_UPLOAD = {"assets": 1, "handled_messages": 4, "work_used": 2}
# Blobs: renders keep their video and thumbnail; uploads their original and renditions;
# drafts their video and thumbnail until they expire a day later.
BLOBS_PER_RENDER, BLOBS_PER_UPLOAD = 3, 8


def mib(kib):
    return kib / 1024


def _tolerance(level):
    return max(COUNT_TOLERANCE[0], math.ceil(level * COUNT_TOLERANCE[1]))


def check(samples, plan, extra):
    """Verdict lines: dicts of resource, ok and text."""
    warm = [s for s in samples if s["t"] < plan["warmup_end"]]
    after = [s for s in samples if s["t"] >= plan["warmup_end"]]
    # Under load: the pause after warm-up (see `rss` below) left out.
    loaded = [s for s in after if s["t"] <= plan["load_end"] and s["phase"] not in ("drain", "quiet")]
    end = samples[-1]
    verdicts = []
    add = lambda resource, ok, text: verdicts.append({"resource": resource, "ok": bool(ok), "text": text})
    if len(loaded) < 4 or not warm:
        add("run", False, f"too short: {len(loaded)} samples under load after warm-up (4 needed)")
        return verdicts
    names = list(end["processes"])

    # Memory. A worker's RSS swings with its renders (their frames in flight), and how
    # many overlap depends on everything else the machine does; what is kept shows when
    # nothing is in flight. A run that judges memory pauses its load after warm-up
    # (plan["pause"]): the level at the end of that quiet spell is held against the level
    # after the last one, at the end. Under load, the floors (10th percentiles) of the
    # first and last tenth after warm-up are given beside it.
    pause = plan.get("pause")
    resumed = pause[1] if pause else plan["warmup_end"]
    window = max(3 * plan["interval"], (plan["load_end"] - resumed) / 10)
    quiet = [s for s in samples if pause and pause[0] <= s["t"] <= pause[1] and s["phase"] == "quiet"]
    idle = [s for s in samples if s["phase"] == "idle"]
    for name in names:
        of = lambda key, ss: [s["processes"][name].get(key) for s in ss if s["processes"].get(name)]
        rss = lambda ss: of("rss_kib", ss)
        loaded_first = rss(s for s in loaded if s["t"] <= resumed + window)
        loaded_last = rss(s for s in loaded if s["t"] >= plan["load_end"] - window)
        if not loaded_first or not loaded_last:
            add("rss", False, f"{name}: no samples (the process exited?)")
            continue
        at_end = end["processes"].get(name)
        # Caches fill for the first minutes: only an hour's run tells a leak from them.
        judged = plan["duration"] >= JUDGE_RSS_AFTER
        if pause and not (rss(quiet) and rss(idle)):
            add("rss", False, f"{name}: no samples at rest (the process exited?)")
            continue
        if pause:
            # The last sample of each quiet spell: the longest settled.
            a, b = rss(quiet)[-1], rss(idle)[-1]
            heap_a, heap_b = of("heap_in_use_kib", quiet)[-1], of("heap_in_use_kib", idle)[-1]
            measured = "at rest"
            # Where the anonymous memory lies at each (sample.anonymous).
            parts = of("anon_kib", quiet)[-1] or {}, of("anon_kib", idle)[-1] or {}
            where = "; anonymous " + ", ".join(f"{k} {mib(parts[0][k]):.1f} → {mib(parts[1][k]):.1f}"
                                               for k in parts[0] if k in parts[1])
        else:
            a, b = _floor(loaded_first), _floor(loaded_last)
            heap_a, heap_b = (_floor([h for h in of("heap_in_use_kib", ss) if h is not None] or [None])
                              for ss in ([s for s in loaded if s["t"] <= resumed + window],
                                         [s for s in loaded if s["t"] >= plan["load_end"] - window]))
            measured, where = "floor under load", ""
        growth = b / a - 1
        # The heap in use against RSS tells a leak (both grow) from fragmentation (RSS alone).
        in_use = f"; heap in use {mib(heap_a):.1f} → {mib(heap_b):.1f}" if heap_a and heap_b else ""
        under_load = (f"; under load floor {mib(_floor(loaded_first)):.1f} → {mib(_floor(loaded_last)):.1f}"
                      if measured == "at rest" else "")
        add("rss", growth <= RSS_GROWTH or not judged,
            ("" if judged else "(not judged in a run under 30 min) ") +
            f"{name}: {measured} {mib(a):.1f} → {mib(b):.1f} MiB after warm-up ({growth:+.1%}; "
            f"limit +{RSS_GROWTH:.0%}){in_use}{where}{under_load}, peak {mib(max(rss(samples))):.1f}, "
            f"at the end {mib(at_end['rss_kib']) if at_end else float('nan'):.1f}")

    # Open files and threads: back within the warm-up's highest (and a tolerance) once the
    # work ended, and never twice it under load (what a leak of one per render reaches).
    for key, resource in (("fds", "fds"), ("threads", "threads")):
        for name in names:
            values = lambda ss: [s["processes"][name][key] for s in ss if s["processes"].get(name)]
            level, later = max(values(warm)), values(after)
            tolerance = _tolerance(level)
            add(resource, later[-1] <= level + tolerance and max(later) <= 2 * level,
                f"{name}: at most {level} during warm-up, {min(later)}–{max(later)} after (at most {2 * level}), "
                f"{later[-1]} at the end (at most {level + tolerance})")

    # Caches: every one within its configured bytes in every sample (each publishes both).
    over, highest = [], {}
    for s in samples:
        for name, p in s["processes"].items():
            for cache, b in (p or {}).get("caches", {}).items():
                if b.get("held", 0) > b.get("limit", 0):
                    over.append(f"{name} {cache} {b['held']} > {b['limit']} at {s['t']:.0f} s")
                key = f"{name} {cache}"
                highest[key] = max(highest.get(key, (0, 0))[0], b.get("held", 0)), b.get("limit", 0)
    add("caches", highest and not over,
        "over their bounds: " + "; ".join(over[:5]) if over else
        "at most " + ", ".join(f"{k} {h / 2**20:.1f} of {lim / 2**20:.0f} MiB" for k, (h, lim) in sorted(highest.items()))
        if highest else "no cache reported its bytes")

    # Work and temporary files: none left once the renders ended, bar the preview cache.
    left, busiest = [], 0
    for name in names:
        p = end["processes"].get(name)
        if p is None:
            left.append(f"{name} exited")
            continue
        work = p["work"]
        stray = {k: v for k, v in work.items() if v and k != "preview"}
        if stray:
            left.append(f"{name} work {stray}")
        if work["preview"] > plan["preview_cache"]:
            left.append(f"{name} {work['preview']} preview sources (cache of {plan['preview_cache']})")
        if p["tmp_files"]:
            left.append(f"{name} {p['tmp_files']} in its TMPDIR")
        busiest = max([busiest] + [s["processes"][name]["work"]["render"] + s["processes"][name]["work"]["convert"]
                                   for s in samples if s["processes"].get(name)])
    backends = end["backends"] or {}
    if backends.get("blob_writes_in_progress"):
        left.append(f"{backends['blob_writes_in_progress']} blob writes in progress")
    add("work files", not left,
        ("left at the end: " + "; ".join(left)) if left else
        f"none left at the end (under load at most {busiest} render and conversion directories at once in a "
        f"process of {plan['slots']} slot{'s' if plan['slots'] > 1 else ''})")

    # Outbox and queues: empty once the load stopped, and empty again and again under it.
    def drained(key, label):
        values = [s["backends"][key] for s in after if s["backends"]]
        if not values:
            return
        empty = sum(v == 0 for v in values) / len(values)
        add(label, backends.get(key) == 0,
            f"{backends.get(key)} at the end; empty in {empty:.0%} of the samples after warm-up, at most {max(values)}")
    drained("outbox", "outbox")
    if "queued" in backends:
        drained("queued", "queues")
    add("dead letters", backends.get("dead_letters") == 0, f"{backends.get('dead_letters')} at the end")

    # Database: only the tables that keep the work done grow, by no more than it explains.
    first = next((s["backends"] for s in after if s["backends"]), None)
    if first and backends:
        grown = {t: backends["rows"][t] - first["rows"].get(t, 0) for t in backends["rows"]}
        renders, uploads = max(grown.get("renders", 0), 0), max(grown.get("assets", 0), 0)
        problems = []
        for table, added in sorted(grown.items()):
            bound = KEPT_PER_RENDER.get(table, 0) * renders + KEPT_PER_UPLOAD.get(table, 0) * uploads
            if added > bound:
                problems.append(f"{table} +{added} (at most {bound})")
        kept = ", ".join(f"{t} {n:+d}" for t, n in sorted(grown.items()) if n)
        growth = (backends["db_bytes"] - first["db_bytes"]) / 1024
        per = f", {growth / renders:.1f} KiB a render" if renders else ""
        add("database", not problems,
            (f"grew beyond the work done: {'; '.join(problems)}" if problems else
             f"rows after warm-up: {kept or 'none'}; {growth:+.0f} KiB{per}; WAL {backends['wal_bytes'] / 2**20:.1f} MiB"
             f"{' (the whole server)' if 'queued' in backends else ''}"))

        blobs = backends["blobs"] - first["blobs"]
        bound = BLOBS_PER_RENDER * renders + BLOBS_PER_UPLOAD * uploads
        by_prefix = {k: v - first["blobs_by_prefix"].get(k, 0) for k, v in backends["blobs_by_prefix"].items()}
        add("blobs", blobs <= bound,
            f"+{blobs} after warm-up (at most {bound}: {BLOBS_PER_RENDER} a render, {BLOBS_PER_UPLOAD} an upload), "
            f"by prefix {by_prefix}, {(backends['blob_bytes'] - first['blob_bytes']) / 2**20:+.1f} MiB")

    if "redis_keys" in backends:
        forever = extra.get("redis_keys_without_expiry", [])
        add("redis", not forever,
            f"{backends['redis_keys']} keys at the end {backends['redis_key_kinds']}, "
            f"{len(forever)} without expiry{(' ' + ', '.join(forever[:5])) if forever else ''}; "
            f"server memory {backends['redis_used_memory'] / 2**20:.1f} MiB")

    # A clean stop: every process exits 0 on SIGTERM and leaves no work or temporary files.
    stops = extra.get("shutdown", {})
    bad = {k: v for k, v in stops.items() if v != {"exit": 0, "work": 0, "tmp": 0}}
    add("shutdown", not bad, f"not clean: {bad}" if bad else "every process exited 0 and left no work or temp files")
    return verdicts


def _floor(values):
    """The 10th percentile of `values` (the lowest of fewer than ten): a process's level
    between its units of work."""
    values = sorted(values)
    return values[(len(values) - 1) // 10]

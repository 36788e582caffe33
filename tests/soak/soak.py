"""One soak run of reelfarm in one mode (scripts/soak runs it per mode; docs/soak.md):
a fresh deployment, a steady mixed load for `--duration`, a sample of every process and
backend every `--interval` seconds, then the verdicts, `report.json` and `report.html`
in `--out`. Exits 1 when a verdict fails, 2 when the run could not be made."""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

import deploy
import load
import report
import sample
import verdict

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def seconds(text):
    found = re.fullmatch(r"(\d+)(s|m|h)?", text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"`{text}` is not a duration (90s, 3m, 1h)")
    return int(found.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[found.group(2)]


def log(mode, text):
    print(f"[soak {mode}] {text}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=("embedded", "distributed"), required=True)
    parser.add_argument("--duration", type=seconds, default=3600, help="how long the load runs (default 1h)")
    parser.add_argument("--interval", type=float, default=10, help="seconds between samples (default 10)")
    parser.add_argument("--out", required=True, help="directory of the reports and logs")
    parser.add_argument("--binary", default=os.path.join(REPO, "target", "debug", "reelfarm"))
    args = parser.parse_args()
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    # Ctrl-C and SIGTERM unwind through the `finally` below, which removes everything.
    signal.signal(signal.SIGTERM, _interrupt)

    mode = args.mode
    deployment = deploy.Deployment(mode, os.path.abspath(args.binary), os.path.join(args.out, "logs"))
    sampler = side = loadtest = None
    try:
        deployment.start()
        where = f"; database {deployment.database}, namespace {deployment.namespace}" if deployment.namespace else ""
        log(mode, f"api at {deployment.base}; {len(deployment.processes)} processes{where}; logs in {args.out}/logs")
        apis, templates = load.set_up(deployment, REPO)
        media = load.make_media(deployment.root)

        t0 = time.time()
        sampler = sample.Sampler(deployment, args.interval, t0)
        sampler.start()
        throughput = load.calibrate(apis[load.ACCOUNTS[0]], templates)
        rate = min(2.0, max(0.02, load.UTILISATION * throughput))
        slots = deploy.SLOTS[mode] * len(deployment.workers())
        log(mode, f"calibration: {throughput * 60:.1f} videos/min on {slots} slots; load test at {rate:.3f} jobs/s")

        load_start = time.time() - t0
        warmup = 600 if args.duration >= 1800 else args.duration / 3
        # A run that judges memory pauses its load once warm-up ends, until no work is in
        # flight and a quiet spell has passed: the memory a process keeps between its
        # units of work is then compared at two quiet moments, not at two loaded ones
        # whose levels depend on how many renders happened to overlap.
        pause = args.duration >= verdict.JUDGE_RSS_AFTER
        quiet = max(3 * args.interval, 30)
        plan = {"interval": args.interval, "duration": args.duration, "load_start": round(load_start, 1),
                "warmup_end": round(load_start + warmup, 1), "load_end": round(load_start + args.duration, 1),
                "rate": round(rate, 4), "calibration_videos_per_min": round(throughput * 60, 2),
                "slots": deploy.SLOTS[mode], "preview_cache": deploy.PREVIEW_CACHE,
                "binary": deployment.binary, "processes": [p.name for p in deployment.processes],
                "namespace": deployment.namespace, "database": deployment.database}
        side = load.SideLoop(apis, templates, media, every=min(20.0, max(5.0, args.duration / 12)))
        side.start()
        exits = []
        loadtest = load.start_loadtest(deployment, apis, templates, rate, warmup if pause else args.duration,
                                       args.out, deployment.binary, "loadtest-warmup" if pause else "loadtest")
        if pause:
            _keep_loading(loadtest, sampler, t0, plan["warmup_end"], plan, args)
            sampler.phase = "drain"
            log(mode, "warm-up over; pausing the load until nothing is in flight")
            side.pause()
            exits.append(loadtest.wait(timeout=600))
            side.outcome()
            _wait_until_idle(sampler)
            sampler.phase = "quiet"
            time.sleep(quiet)
            resumed = time.time() - t0
            plan["pause"] = [plan["warmup_end"], round(resumed, 1)]
            plan["load_end"] = round(resumed + args.duration - warmup, 1)
            side.resume()
            loadtest = load.start_loadtest(deployment, apis, templates, rate, args.duration - warmup, args.out,
                                           deployment.binary)
        _keep_loading(loadtest, sampler, t0, plan["load_end"], plan, args)

        sampler.phase = "drain"
        side.stop()
        log(mode, "load stopped; waiting for its renders to end")
        exits.append(loadtest.wait(timeout=600))
        loadtest_exit = max(exits, key=abs)
        side_outcome = side.outcome()
        # A quiet spell: what is left after it stays.
        sampler.phase = "idle"
        time.sleep(quiet)
        sampler.stop()
        end = sampler.take()
        plan["end"] = end["t"]

        extra = {"loadtest_exit": loadtest_exit, "side_actions": side.done, "side_outcome": side_outcome,
                 "side_failures": side.failures[:20], "probe_errors": sampler.errors[:20]}
        if mode == "distributed":
            extra["redis_keys_without_expiry"] = deployment.redis_keys_without_expiry()
        deployment.stop()
        extra["shutdown"] = {p.name: {"exit": p.exit_code, "work": _entries(os.path.join(p.data_dir, "work")),
                                      "tmp": _entries(p.tmp_dir)} for p in deployment.processes}

        verdicts = verdict.check(sampler.samples, plan, extra)
        if loadtest_exit != 0 or side.failures:
            verdicts.append({"resource": "load", "ok": False, "text":
                             f"load test exit {loadtest_exit}; side actions failed: {side.failures[:3]}"})
        else:
            verdicts.append({"resource": "load", "ok": True, "text": f"load test exit 0; side actions {side.done}, "
                                                                     f"ended {side_outcome}"})
        report.write(args.out, mode, plan, sampler.samples, verdicts, extra)
        if sampler.errors:
            log(mode, f"{len(sampler.errors)} samples missed the backends, first: {sampler.errors[0]}")
        for v in verdicts:
            print(f"[soak {mode}] {'PASS' if v['ok'] else 'FAIL'}  {v['resource']:<12} {v['text']}", flush=True)
        print(f"[soak {mode}] report: {os.path.join(args.out, 'report.html')}", flush=True)
        return 0 if all(v["ok"] for v in verdicts) else 1
    except KeyboardInterrupt:
        log(mode, "interrupted; cleaning up")
        return 130
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        log(mode, f"the run failed: {e}")
        return 2
    finally:
        try:
            if loadtest and loadtest.poll() is None:
                loadtest.kill()
                loadtest.wait()
            for thread in (sampler, side):
                if thread and thread.is_alive():
                    thread.stop()
        finally:
            for problem in deployment.close():
                log(mode, problem)


def _keep_loading(loadtest, sampler, t0, until, plan, args):
    """Samples go on while the load test runs until `until` (seconds from `t0`); a line a
    minute says how far it is. The phase turns from warm-up to load at the plan's
    `warmup_end`."""
    shown = time.time()
    while time.time() - t0 < until:
        sampler.phase = "warm-up" if time.time() - t0 < plan["warmup_end"] else "load"
        if loadtest.poll() is not None:
            raise RuntimeError(f"the load test stopped early ({loadtest.returncode}); "
                               f"see the loadtest logs in {args.out}")
        if time.time() - shown >= 60 and sampler.samples:
            shown = time.time()
            log(args.mode, _progress(sampler.samples[-1], plan, args.duration))
        time.sleep(1)


def _wait_until_idle(sampler, within=300):
    """Waits (at most `within` seconds) until a sample shows no render or conversion
    under way in any process and an empty outbox and queues."""
    deadline = time.time() + within
    while time.time() < deadline:
        time.sleep(sampler.interval)
        latest = sampler.samples[-1]
        busy = any(p and (p["work"]["render"] or p["work"]["convert"]) for p in latest["processes"].values())
        backends = latest["backends"] or {}
        if not busy and not backends.get("outbox") and not backends.get("queued"):
            return
    raise RuntimeError(f"work still in flight {within} s after the warm-up's load stopped")


def _progress(sample, plan, duration):
    """A minute's line: how far the load is (the pause after warm-up not counted), and each
    process's memory, fds and threads."""
    paused = 0.0
    if "pause" in plan and sample["t"] > plan["pause"][1]:
        paused = plan["pause"][1] - plan["pause"][0]
    done = max(0.0, sample["t"] - plan["load_start"] - paused)
    processes = ", ".join(
        f"{name} {p['rss_kib'] // 1024} MiB {p['fds']} fds {p['threads']} threads"
        for name, p in sample["processes"].items() if p
    )
    return f"{done / 60:.0f} of {duration / 60:.0f} min ({sample['phase']}): {processes}"


def _interrupt(*_):
    raise KeyboardInterrupt


def _entries(directory):
    try:
        return len(os.listdir(directory))
    except FileNotFoundError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

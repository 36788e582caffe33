"""What one sample holds: for every process its memory, threads and open files from
/proc, and its work and temporary files; the backends' figures from the deployment.

The binary uses glibc's malloc, whose statistics (mallinfo2) only the process itself can
read: it publishes them in its metrics (`reelfarm_heap_bytes`: in use, and free inside its
arenas), read here beside VmRSS and RssAnon (the heap arenas and thread stacks)."""

import os
import re
import threading
import time
import urllib.request

# Work directories by what made them (worker/src: `render-`, `convert-`, `template-`,
# `preview-` prefixes under DATA_DIR/work).
WORK_KINDS = ("render", "convert", "template", "preview")


def process(p, at_rest=False):
    """/proc figures and files of one deployment process (None once it has exited); at
    rest also where its anonymous memory lies (`anon_kib`, see `anonymous`)."""
    pid = p.popen.pid
    try:
        status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status"))
        fds = os.listdir(f"/proc/{pid}/fd")
    except (FileNotFoundError, ProcessLookupError):
        return None
    kib = lambda key: int(status[key].split()[0]) if key in status else None
    sockets = 0
    for fd in fds:
        try:
            sockets += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    work = dict.fromkeys(WORK_KINDS, 0)
    work["other"] = 0
    work_dir = os.path.join(p.data_dir, "work")
    if os.path.isdir(work_dir):
        for name in os.listdir(work_dir):
            kind = name.split("-")[0]
            work[kind if kind in WORK_KINDS else "other"] += 1
    tmp_files = sum(len(dirs) + len(files) for _, dirs, files in os.walk(p.tmp_dir))
    heap, caches = _metrics(p.metrics)
    figures = {
        "rss_kib": kib("VmRSS"),
        "heap_in_use_kib": heap.get("in_use"),
        "heap_free_kib": heap.get("free"),
        "caches": caches,
        "rss_anon_kib": kib("RssAnon"),
        "rss_file_kib": kib("RssFile"),
        "threads": int(status["Threads"]),
        "fds": len(fds),
        "sockets": sockets,
        "work": work,
        "tmp_files": tmp_files,
    }
    if at_rest:
        figures["anon_kib"] = anonymous(pid)
    return figures


# glibc's heaps other than the main one: mappings of up to this size at addresses aligned
# to it (HEAP_MAX_SIZE on 64-bit), their unused end mapped PROT_NONE.
ARENA_HEAP = 64 << 20


def anonymous(pid):
    """The process's resident anonymous memory by where it lies (KiB), from its smaps:
    `heap` (glibc's main heap and its other arenas' heaps), `stacks` (threads' stacks: a
    mapping right above its guard page), `other` (libraries' written pages, mmapped
    blocks and anything else); {} once it has exited."""
    found = {"heap": 0, "stacks": 0, "other": 0}
    previous = current = None
    try:
        lines = open(f"/proc/{pid}/smaps").read().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return {}
    for line in lines:
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):
            low, high = (int(x, 16) for x in fields[0].split("-"))
            previous, current = current, {"low": low, "high": high, "perm": fields[1],
                                          "name": fields[5] if len(fields) > 5 else ""}
            current["guarded"] = bool(previous and previous["high"] == low and previous["perm"].startswith("---"))
        elif fields and fields[0] == "Anonymous:" and current:
            kib = int(fields[1])
            if current["name"] == "[heap]" or (not current["name"] and current["low"] % ARENA_HEAP == 0
                                              and current["high"] - current["low"] <= ARENA_HEAP):
                found["heap"] += kib
            elif not current["name"] and current["guarded"] or current["name"] == "[stack]":
                found["stacks"] += kib
            else:
                found["other"] += kib
    return found


def _metrics(metrics):
    """The process's `reelfarm_heap_bytes` by state, in KiB, and its caches'
    `reelfarm_cache_bytes` ({cache: {"held": bytes, "limit": bytes}}); empty when they
    cannot be read."""
    if not metrics:
        return {}, {}
    try:
        with urllib.request.urlopen(metrics, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}, {}
    found = re.findall(r'^reelfarm_heap_bytes\{state="(\w+)"\} (\d+)', text, re.M)
    caches = {}
    for cache, state, value in re.findall(r'^reelfarm_cache_bytes\{cache="(\w+)",state="(\w+)"\} (\d+)', text, re.M):
        caches.setdefault(cache, {})[state] = int(value)
    return {state: int(value) // 1024 for state, value in found}, caches


class Sampler(threading.Thread):
    """Samples the deployment every `interval` seconds until `stop()`; each sample is
    tagged with the run's phase at the time."""

    def __init__(self, deployment, interval, t0):
        super().__init__(daemon=True)
        self.deployment, self.interval, self.t0 = deployment, interval, t0
        self.samples = []
        self.phase = "calibrate"
        self.errors = []
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            started = time.time()
            self.take()
            self._halt.wait(max(0.0, self.interval - (time.time() - started)))

    def take(self):
        sample = {"t": round(time.time() - self.t0, 1), "phase": self.phase, "processes": {}}
        for p in self.deployment.processes:
            sample["processes"][p.name] = process(p, at_rest=self.phase in ("quiet", "idle"))
        try:
            sample["backends"] = self.deployment.probe()
        except Exception as e:  # noqa: BLE001 — a probe that fails once is noted, not fatal
            self.errors.append(f"t={sample['t']}: {e}")
            sample["backends"] = None
        self.samples.append(sample)
        return sample

    def stop(self):
        self._halt.set()
        self.join()

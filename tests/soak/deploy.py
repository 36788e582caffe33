"""A deployment of the soak run's own: `serve all` on a temporary data directory
(embedded), or `serve api`, two `serve worker` and `serve notifier` on a fresh PostgreSQL
database, RabbitMQ and Redis namespace and S3 prefix (distributed). Each process gets a
data directory and a TMPDIR of its own, so that its work and temporary files are its
alone. `probe()` reads the backends; `close()` stops everything and removes what the run
made (also after Ctrl-C)."""

import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import urllib.request

import s3

# Worker slots: two in all in either mode, as the operator of issue #39 ran it.
SLOTS = {"embedded": 2, "distributed": 1}
# Cap of the preview sources a worker keeps (worker/src/job/preview.rs: PREVIEW_CACHE).
PREVIEW_CACHE = 8
POSTGRES = "postgres://postgres@127.0.0.1:5432"
AMQP = "amqp://guest:guest@127.0.0.1:5672/%2f"
REDIS = "redis://127.0.0.1:6379"


def run(args, **kw):
    """A command's stdout; raises with its stderr when it fails."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: {done.stderr.strip()[-600:]}")
    return done.stdout


class Process:
    def __init__(self, name, role, popen, data_dir, tmp_dir, log, metrics=None):
        self.name, self.role, self.popen = name, role, popen
        self.data_dir, self.tmp_dir, self.log = data_dir, tmp_dir, log
        # Where its Prometheus metrics are (the heap's figures among them).
        self.metrics = metrics
        self.exit_code = None


class Deployment:
    def __init__(self, mode, binary, logs):
        self.mode, self.binary, self.logs = mode, binary, logs
        self.root = tempfile.mkdtemp(prefix="reelfarm-soak-")
        self.processes = []
        self.base = None
        self.namespace = self.database = self.bucket = None
        self.env = dict(
            os.environ,
            REELFARM_LISTEN="127.0.0.1:0",
            REELFARM_BOOTSTRAP="off",
            REELFARM_RATE_LIMIT="0",
            REELFARM_OUTBOUND_ALLOW="127.0.0.1",
            REELFARM_WORKER_SLOTS=str(SLOTS[mode]),
            NO_COLOR="1",
        )
        if mode == "distributed":
            blob = os.environ.get("REELFARM_TEST_S3_URL")
            if not blob:
                raise SystemExit("distributed mode needs the S3 server: scripts/garage start; source target/garage/env")
            # Names scripts/setup recognises as leftovers of a killed run.
            self.namespace = "t" + secrets.token_hex(16)
            self.database = "rf_test_" + self.namespace[1:]
            run(["psql", f"{POSTGRES}/postgres", "-qc", f"CREATE DATABASE {self.database}"])
            self.env.update(
                REELFARM_DATABASE_URL=f"{POSTGRES}/{self.database}",
                REELFARM_BUS_URL=AMQP,
                REELFARM_REDIS_URL=REDIS,
                REELFARM_BLOB_URL=blob.replace("?", f"/{self.namespace}?", 1),
                REELFARM_NAMESPACE=self.namespace,
                REELFARM_SECRET_KEY=secrets.token_hex(32),
            )
            self.bucket = s3.Bucket(
                self.env["REELFARM_BLOB_URL"], os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
            )

    # -- processes ---------------------------------------------------------------------

    def start(self):
        """Starts the processes; returns once the api is ready."""
        if self.mode == "embedded":
            # One data directory for every role: the embedded store and blobs live there.
            self._spawn("all", "all", data_dir=os.path.join(self.root, "data"))
        else:
            self._spawn("api", "api")
        self.base = self._api_address(self.processes[0])
        self.processes[0].metrics = f"{self.base}/metrics"
        deadline = time.time() + 120
        while not self._ready():
            if time.time() > deadline:
                raise RuntimeError(f"the api at {self.base} was not ready within 120 s; see {self.processes[0].log}")
            time.sleep(0.5)
        if self.mode == "distributed":
            for name, role in (("worker-1", "worker"), ("worker-2", "worker"), ("notifier", "notifier")):
                # Workers and the notifier serve their metrics on an operations port.
                self._spawn(name, role, ops_port=_free_port())

    def _spawn(self, name, role, data_dir=None, ops_port=None):
        data_dir = data_dir or os.path.join(self.root, name, "data")
        tmp_dir = os.path.join(self.root, name, "tmp")
        os.makedirs(data_dir, exist_ok=True)
        os.makedirs(tmp_dir, exist_ok=True)
        log = os.path.join(self.logs, f"{name}.log")
        env = dict(self.env, REELFARM_DATA_DIR=data_dir, TMPDIR=tmp_dir)
        metrics = None
        if ops_port:
            env["REELFARM_OPS_LISTEN"] = f"127.0.0.1:{ops_port}"
            metrics = f"http://127.0.0.1:{ops_port}/metrics"
        with open(log, "w") as out:
            # A session of its own: Ctrl-C reaches the driver, which stops it in order.
            popen = subprocess.Popen(
                [self.binary, "serve", role], env=env, stdout=out, stderr=out, start_new_session=True
            )
        self.processes.append(Process(name, role, popen, data_dir, tmp_dir, log, metrics))

    def _api_address(self, process):
        deadline = time.time() + 120
        while time.time() < deadline:
            if process.popen.poll() is not None:
                raise RuntimeError(f"{process.name} exited with {process.popen.returncode}; see {process.log}")
            with open(process.log, errors="replace") as f:
                text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
            found = re.search(r"api listening address=127\.0\.0\.1:(\d+)", text)
            if found:
                return f"http://127.0.0.1:{found.group(1)}"
            time.sleep(0.2)
        raise RuntimeError(f"no `api listening` line in {process.log} within 120 s")

    def _ready(self):
        try:
            with urllib.request.urlopen(f"{self.base}/readyz", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def admin(self, *args):
        """`reelfarm admin ARGS` against this deployment; its stdout, stripped."""
        api = self.processes[0]
        env = dict(self.env, REELFARM_DATA_DIR=api.data_dir, TMPDIR=os.path.join(self.root, "admin-tmp"))
        os.makedirs(env["TMPDIR"], exist_ok=True)
        return run([self.binary, "admin", *args], env=env, timeout=300).strip()

    def workers(self):
        return [p for p in self.processes if p.role in ("all", "worker")]

    def stop(self, within=60):
        """SIGTERM to every process (workers drain their work), SIGKILL past `within`."""
        for p in reversed(self.processes):
            if p.popen.poll() is None:
                p.popen.send_signal(signal.SIGTERM)
        deadline = time.time() + within
        for p in self.processes:
            try:
                p.exit_code = p.popen.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.popen.kill()
                p.popen.wait()
                p.exit_code = "killed"

    # -- backends ----------------------------------------------------------------------

    def probe(self):
        """The backends' figures: database, outbox, queues, cache and blobs."""
        if self.mode == "embedded":
            return self._probe_embedded()
        return self._probe_distributed()

    def _probe_embedded(self):
        data = self.processes[0].data_dir
        size = lambda name: _size(os.path.join(data, name))
        db = sqlite3.connect(f"file:{os.path.join(data, 'reelfarm.db')}?mode=ro", uri=True, timeout=10)
        try:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            rows = {t: db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables if t[0] != "_"}
        finally:
            db.close()
        blobs = _files(os.path.join(data, "blobs"), skip=("~tmp",), suffix_skip="~meta")
        return {
            "db_bytes": size("reelfarm.db"),
            "wal_bytes": size("reelfarm.db-wal"),
            "rows": rows,
            "outbox": rows.get("outbox", 0),
            "dead_letters": rows.get("dead_letters", 0),
            "blobs": blobs["count"],
            "blob_bytes": blobs["bytes"],
            "blobs_by_prefix": blobs["by_prefix"],
            "blob_writes_in_progress": _files(os.path.join(data, "blobs", "~tmp"))["count"],
        }

    def _probe_distributed(self):
        url = self.env["REELFARM_DATABASE_URL"]
        if not hasattr(self, "_tables"):
            self._tables = run(
                ["psql", url, "-Atc", "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"]
            ).split()
            self._tables = [t for t in self._tables if t[0] != "_"]
        counts = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM \"{t}\"" for t in self._tables)
        sizes = "SELECT 'db_bytes', pg_database_size(current_database()) UNION ALL " \
                "SELECT 'wal_bytes', (SELECT coalesce(sum(size), 0) FROM pg_ls_waldir())"
        out = run(["psql", url, "-AtF", "\t", "-c", f"{sizes} UNION ALL {counts}"])
        pairs = dict(line.split("\t") for line in out.splitlines() if line)
        rows = {t: int(pairs[t]) for t in self._tables}
        queues = {}
        listing = run(["rabbitmqctl", "list_queues", "-q", "--no-table-headers", "name", "messages"], timeout=60)
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].startswith(self.namespace + "."):
                queues[parts[0][len(self.namespace) + 1:]] = int(parts[1])
        keys = run(["redis-cli", "--scan", "--pattern", f"rf:{self.namespace}:*"]).split()
        memory = re.search(r"used_memory:(\d+)", run(["redis-cli", "INFO", "memory"]))
        by_prefix, count, total = {}, 0, 0
        for key, size in self.bucket.objects():
            kind = key[len(self.bucket.prefix):].split("/")[0]
            count, total = count + 1, total + size
            by_prefix[kind] = by_prefix.get(kind, 0) + 1
        return {
            "db_bytes": int(pairs["db_bytes"]),
            "wal_bytes": int(pairs["wal_bytes"]),
            "rows": rows,
            "outbox": rows.get("outbox", 0),
            "dead_letters": sum(n for q, n in queues.items() if q.endswith(".dead")),
            "queues": queues,
            "queued": sum(n for q, n in queues.items() if not q.endswith(".dead")),
            "redis_keys": len(keys),
            "redis_key_kinds": _kinds(k[len(f"rf:{self.namespace}:"):] for k in keys),
            "redis_used_memory": int(memory.group(1)) if memory else None,
            "blobs": count,
            "blob_bytes": total,
            "blobs_by_prefix": by_prefix,
        }

    def redis_keys_without_expiry(self):
        """Keys of the namespace that never expire (distributed mode)."""
        keys = run(["redis-cli", "--scan", "--pattern", f"rf:{self.namespace}:*"]).split()
        if not keys:
            return []
        ttls = run(["redis-cli"], input="".join(f"TTL {k}\n" for k in keys)).split()
        return [k for k, ttl in zip(keys, ttls) if ttl == "-1"]

    # -- the end -----------------------------------------------------------------------

    def close(self):
        """Stops what still runs and removes the data, database, queues, keys and blobs."""
        self.stop(within=30)
        problems = []
        if self.mode == "distributed":
            steps = [
                ("database", lambda: run(["psql", f"{POSTGRES}/postgres", "-qc",
                                          f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)"])),
                ("queues", self._delete_queues),
                ("redis keys", self._delete_keys),
                ("blobs", self.bucket.delete_all),
            ]
            for what, step in steps:
                try:
                    step()
                except Exception as e:  # noqa: BLE001 — report every leftover, go on with the rest
                    problems.append(f"removing the {what} of {self.namespace}: {e}")
        shutil.rmtree(self.root, ignore_errors=True)
        return problems

    def _delete_queues(self):
        listing = run(["rabbitmqctl", "list_queues", "-q", "--no-table-headers", "name"], timeout=60)
        for queue in listing.split():
            if queue.startswith(self.namespace + "."):
                run(["rabbitmqctl", "delete_queue", "-q", queue], timeout=60)

    def _delete_keys(self):
        keys = run(["redis-cli", "--scan", "--pattern", f"rf:{self.namespace}:*"]).split()
        for at in range(0, len(keys), 500):
            run(["redis-cli", "DEL", *keys[at:at + 500]])


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _files(root, skip=(), suffix_skip=None):
    """Files under `root` (not under the names in `skip`): count, bytes and the count by
    first path component."""
    count, total, by_prefix = 0, 0, {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in filenames:
            if suffix_skip and name.endswith(suffix_skip):
                continue
            count += 1
            total += _size(os.path.join(dirpath, name))
            kind = os.path.relpath(dirpath, root).split(os.sep)[0]
            by_prefix[kind] = by_prefix.get(kind, 0) + 1
    return {"count": count, "bytes": total, "by_prefix": by_prefix}


def _kinds(keys):
    """Keys counted by their first `:`-separated part (`progress`, `rate`, …)."""
    kinds = {}
    for key in keys:
        kind = key.split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def _free_port():
    """A port nothing listens on now (the system's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

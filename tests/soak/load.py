"""The soak's load: two accounts sharing three example templates; a calibration batch
that sets the pace; `reelfarm loadtest` at a steady rate with callbacks to its own
listener; and beside it a loop doing what the load test does not (uploads converted into
renditions, preview frames, drafts, jobs in other formats, cancels)."""

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

# Cheap examples (1–2 s each at 480p on one core), with a text variable numbered per video.
TEMPLATES = {
    "quote-card": {"265178f4-d980-40e9-ab00-e7874fb58e0f": "Soak quote number {n}",
                   "c21ef956-cbef-40d3-8d33-229153b17990": "Author {n}"},
    "news-lower-third": {"996c42a0-b11b-4016-b4f5-1dde2d7be264": "Soak headline {n}"},
    "podcast-audiogram": {"415efbf1-b197-4ad1-8a87-4be3ff5dda37": "Episode {n}"},
}
QUALITIES = ["480p", "720p"]
COVER_ART = "3433961f-1b02-4d17-af84-f50fa00b8bc3"  # podcast-audiogram's image variable
ACCOUNTS = ("ann", "bob")
# Share of the farm's measured throughput the load test asks for; the side loop adds a
# little more. Below 1, so the queues empty between bursts.
UTILISATION = 0.4


class Api:
    def __init__(self, base, token):
        self.base, self.token = base, token

    def call(self, method, path, body=None, content_type="application/json", raw=False):
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        with urllib.request.urlopen(request, timeout=120) as response:
            payload = response.read()
        return payload if raw else json.loads(payload or b"null")


def set_up(deployment, repo):
    """Users with credits and tokens; the templates, owned by the first and shared with
    the second. Returns ({account: Api}, {template name: id})."""
    apis = {}
    for name in ACCOUNTS:
        deployment.admin("user", "create", name, "--credits", "1000000")
        apis[name] = Api(deployment.base, deployment.admin("token", "create", name))
        # Made on first use: now, rather than by the first upload after warm-up.
        apis[name].call("GET", "/api2/v1/user/me/personal-library")
    templates = {}
    for name in TEMPLATES:
        path = os.path.join(repo, "examples", "templates", f"{name}.json")
        templates[name] = deployment.admin("template", "import", path, "--owner", ACCOUNTS[0])
        deployment.admin("template", "share", templates[name], ACCOUNTS[1])
    return apis, templates


def job_body(template, values, quality="480p", fmt=None, n=0):
    variables = {k: v.replace("{n}", str(n)) for k, v in values.items()}
    options = {"quality": quality}
    if fmt:
        options["format"] = fmt
    return {"template_id": template, "options": options, "values": [{"external_id": f"soak-{n}",
                                                                     "template_variables": variables}]}


def wait_jobs(api, ids, within=600):
    """Waits until none of the jobs is `started`; their final statuses."""
    deadline, statuses = time.time() + within, {}
    while True:
        statuses = {i: api.call("GET", f"/generator/v1/jobs/{i}")["status"] for i in ids}
        if "started" not in statuses.values() or time.time() > deadline:
            return statuses
        time.sleep(1)


def calibrate(api, templates):
    """Renders every template at every quality at once; videos per second the farm did."""
    started = time.time()
    ids = [api.call("POST", "/generator/v1/jobs", job_body(templates[t], TEMPLATES[t], q))["id"]
           for t in TEMPLATES for q in QUALITIES]
    statuses = wait_jobs(api, ids)
    failed = [s for s in statuses.values() if s != "finished"]
    if failed:
        raise RuntimeError(f"calibration jobs ended {statuses}")
    return len(ids) / (time.time() - started)


def start_loadtest(deployment, apis, templates, rate, duration_s, out, binary, label="loadtest"):
    """`reelfarm loadtest` as a child process: a scenario of the two accounts, the three
    templates and both qualities at `rate` jobs per second (every 12 jobs the whole mix:
    each account each template at each quality). Its report goes to `out/label/`, its
    scenario and log beside it."""
    lines = [f'url = "{deployment.base}"', f"rate = {rate:.4f}", f'duration = "{round(duration_s)}s"',
             f"qualities = {json.dumps(QUALITIES)}"]
    for name, values in TEMPLATES.items():
        inline = ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in values.items())
        lines += ["", "[[templates]]", f'id = "{templates[name]}"', f"values = {{ {inline} }}"]
    env = dict(os.environ, TMPDIR=deployment.root)
    for name, api in apis.items():
        lines += ["", "[[accounts]]", f'name = "{name}"', f'token_env = "SOAK_TOKEN_{name.upper()}"']
        env[f"SOAK_TOKEN_{name.upper()}"] = api.token
    scenario = os.path.join(out, f"{label}.toml")
    with open(scenario, "w") as f:
        f.write("\n".join(lines) + "\n")
    log = open(os.path.join(out, f"{label}.log"), "w")
    return subprocess.Popen(
        [binary, "loadtest", "--scenario", scenario, "--drain-timeout", "5m", "-o", os.path.join(out, label)],
        env=env, stdout=log, stderr=log, start_new_session=True,
    )


class SideLoop(threading.Thread):
    """Every `every` seconds, the next of: an image upload, a preview frame, a draft, a
    video upload, a job in another format (the last image as cover art), a job cancelled
    at once; by each account in turn. Counts what it did and the jobs it started; does
    nothing between `pause()` and `resume()`."""

    ACTIONS = ("upload_image", "preview", "draft", "upload_video", "other_format", "cancel")
    FORMATS = ("webm", "gif", "jpg", "png")

    def __init__(self, apis, templates, media, every):
        super().__init__(daemon=True)
        self.apis, self.templates, self.media, self.every = list(apis.values()), templates, media, every
        self.done = {a: 0 for a in self.ACTIONS}
        self.failures = []
        self.jobs = []  # (api, job id) to wait for
        self.assets = []  # (api, asset id) to wait for
        self.cover = None
        self._halt = threading.Event()
        self._going = threading.Event()
        self._going.set()
        self._acting = threading.Lock()

    def run(self):
        n, wait = 0, 0
        while not self._halt.wait(wait):
            wait = self.every
            with self._acting:
                if self._going.is_set():
                    self._act(n)
                    n += 1

    def _act(self, n):
        # Each account in turn, a round of every action at a time.
        action = self.ACTIONS[n % len(self.ACTIONS)]
        api = self.apis[(n // len(self.ACTIONS)) % len(self.apis)]
        try:
            getattr(self, action)(api, n)
            self.done[action] += 1
        except (OSError, urllib.error.HTTPError, KeyError, ValueError) as e:
            detail = e.read()[:300].decode(errors="replace") if isinstance(e, urllib.error.HTTPError) else ""
            self.failures.append(f"{action}: {e} {detail}".strip())

    def stop(self):
        self._halt.set()
        self.join()

    def pause(self):
        """No action starts until `resume()`; returns once the one under way has ended."""
        self._going.clear()
        with self._acting:
            pass

    def resume(self):
        self._going.set()

    def _upload(self, api, path, content_type):
        created = api.call("POST", "/api2/v1/objects", f"filename={os.path.basename(path)}".encode(),
                           "application/x-www-form-urlencoded")
        with open(path, "rb") as f:
            put = urllib.request.Request(created["url"], data=f.read(), method="PUT")
        put.add_header("Content-Type", content_type)
        urllib.request.urlopen(put, timeout=120).read()
        self.assets.append((api, created["data"]["id"]))
        return created["data"]["id"]

    def upload_image(self, api, n):
        asset = self._upload(api, self.media["png"], "image/png")
        if api is self.apis[0]:
            self.cover = asset

    def upload_video(self, api, n):
        self._upload(api, self.media["mp4"], "video/mp4")

    def preview(self, api, n):
        template = self.templates["news-lower-third"]
        api.call("POST", f"/generator/v1/templates/{template}/preview", {"t": 1.0 + n % 7}, raw=True)

    def draft(self, api, n):
        template = self.templates["quote-card"]
        job = api.call("POST", f"/generator/v1/templates/{template}/draft", {})
        self.jobs.append((api, job["id"]))

    def other_format(self, api, n):
        fmt = self.FORMATS[(n // len(self.ACTIONS)) % len(self.FORMATS)]
        values = dict(TEMPLATES["podcast-audiogram"])
        body = job_body(self.templates["podcast-audiogram"], values, "480p", fmt, n)
        if self.cover and api is self.apis[0]:
            body["values"][0]["template_variables"][COVER_ART] = self.cover
        job = api.call("POST", "/generator/v1/jobs", body)
        self.jobs.append((api, job["id"]))

    def cancel(self, api, n):
        name = "news-lower-third"
        job = api.call("POST", "/generator/v1/jobs", job_body(self.templates[name], TEMPLATES[name], "720p", n=n))
        time.sleep(1)
        api.call("POST", f"/generator/v1/jobs/{job['id']}/cancel")
        self.jobs.append((api, job["id"]))

    def outcome(self, within=300):
        """Waits for the side jobs and uploads to end; their final statuses, counted."""
        deadline, counts = time.time() + within, {}
        for api, job in self.jobs:
            status = api.call("GET", f"/generator/v1/jobs/{job}")["status"]
            while status == "started" and time.time() < deadline:
                time.sleep(1)
                status = api.call("GET", f"/generator/v1/jobs/{job}")["status"]
            counts[f"job {status}"] = counts.get(f"job {status}", 0) + 1
        for api, asset in self.assets:
            status = api.call("GET", f"/api2/v1/objects/{asset}")["status"]
            while status in ("created", "processing") and time.time() < deadline:
                time.sleep(1)
                status = api.call("GET", f"/api2/v1/objects/{asset}")["status"]
            counts[f"upload {status}"] = counts.get(f"upload {status}", 0) + 1
        return counts


def make_media(directory):
    """A small PNG and a 2 s MP4 with sound, generated by the ffmpeg CLI."""
    png, mp4 = os.path.join(directory, "soak.png"), os.path.join(directory, "soak.mp4")
    quiet = ["ffmpeg", "-v", "error", "-y"]
    subprocess.run([*quiet, "-f", "lavfi", "-i", "testsrc=size=640x480:rate=1", "-frames:v", "1", png], check=True)
    subprocess.run([*quiet, "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=2", "-f", "lavfi",
                    "-i", "sine=frequency=440:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-shortest", mp4], check=True)
    return {"png": png, "mp4": mp4}

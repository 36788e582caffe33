"""Renders a quote card through the Python client openapi-python-client generates from
/openapi.json (scripts/clients puts it on PYTHONPATH): a job with a new quote at 480p,
polled until it finishes, and its video downloaded and checked to be an MP4. Only the
generated models and api functions talk to the API.

    python render.py BASE TOKEN TEMPLATE
"""

import sys
import time
import uuid

from reelfarm_client import AuthenticatedClient
from reelfarm_client.api.jobs import jobs_create, jobs_get
from reelfarm_client.models import (
    JobBody,
    JobJson,
    JobOptions,
    JobOptionsQualityType0,
    VideoValues,
    VideoValuesTemplateVariablesType0,
)

# The quote card's quote (examples/templates/quote-card.json).
QUOTE = "265178f4-d980-40e9-ab00-e7874fb58e0f"
TIMEOUT_S = 120


def main(base: str, token: str, template: str) -> None:
    client = AuthenticatedClient(base_url=base, token=token, raise_on_unexpected_status=True)
    quote = f"Generated clients trust the document ({uuid.uuid4().hex[:8]})"
    variables = VideoValuesTemplateVariablesType0()
    variables[QUOTE] = quote
    body = JobBody(
        template_id=template,
        options=JobOptions(quality=JobOptionsQualityType0("480p")),
        values=[VideoValues(external_id="clients", template_variables=variables)],
    )
    job = jobs_create.sync(client=client, body=body)
    if not isinstance(job, JobJson):
        sys.exit(f"POST /generator/v1/jobs answered {job!r}, not a job")
    if job.quality != "480p" or len(job.videos) != 1:
        sys.exit(f"the job is not the one asked for: {job!r}")
    deadline = time.monotonic() + TIMEOUT_S
    while job.status != "finished":
        if time.monotonic() > deadline:
            sys.exit(f"job {job.id} still {job.status} after {TIMEOUT_S} s")
        time.sleep(1)
        fetched = jobs_get.sync(client=client, id=job.id)
        if not isinstance(fetched, JobJson):
            sys.exit(f"GET /generator/v1/jobs/{job.id} answered {fetched!r}")
        job = fetched
    video = job.videos[0]
    if video.status != "success" or not video.url:
        sys.exit(f"the render ended {video.status}: {video.error}")
    # The video's address is a file, not an operation of the API: the client's connection
    # fetches it, following the redirect to the object store in distributed mode (httpx
    # leaves the token out of a request to another origin).
    answer = client.get_httpx_client().get(video.url, follow_redirects=True)
    answer.raise_for_status()
    mp4 = answer.content
    if len(mp4) < 8 or mp4[4:8] != b"ftyp":
        sys.exit(f"{video.url} is not an MP4 ({len(mp4)} bytes, starts {mp4[:16]!r})")
    print(f"job {job.id}: {len(mp4)} bytes of MP4 at {video.url}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])

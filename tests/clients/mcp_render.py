"""The MCP server at /mcp through the official Python SDK (`mcp`): a request without a
token is refused as the API refuses it; with one, the tools are listed, the quote card is
described, previewed and rendered with a new quote (variables by name), the job is
followed to `finished` and its video downloaded; a value for no variable is a tool error
naming it; the template is a resource.

    python tests/clients/mcp_render.py BASE TOKEN TEMPLATE
"""

import asyncio
import base64
import json
import sys
import time

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

BASE, TOKEN, TEMPLATE = sys.argv[1:4]
QUOTE = "Whatever you do, do it well. Then render it again."
TOOLS = ["cancel_job", "describe_template", "job_status", "list_templates", "preview_frame", "render", "upload_file"]


async def main() -> None:
    async with httpx2.AsyncClient() as anonymous:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        accept = {"Accept": "application/json, text/event-stream"}
        refused = await anonymous.post(f"{BASE}/mcp", json=message, headers=accept)
        assert refused.status_code == 401, refused.text
        assert refused.json()["key"] == "error.unauthorized", refused.text

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    async with Client(streamable_http_client(f"{BASE}/mcp", http_client=http)) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert tools == TOOLS, tools

        listed = await client.call_tool("list_templates", {})
        assert TEMPLATE in [t["id"] for t in listed.structured_content["templates"]], listed
        described = await client.call_tool("describe_template", {"template_id": TEMPLATE})
        variables = {v["name"]: v for v in described.structured_content["variables"]}
        assert variables["Quote"]["type"] == "text", variables

        frame = await client.call_tool("preview_frame", {"template_id": TEMPLATE, "t": 2, "values": {"Quote": QUOTE}})
        assert not frame.is_error, frame
        assert frame.content[0].type == "image" and frame.content[0].mime_type == "image/jpeg", frame.content[0]
        assert base64.b64decode(frame.content[0].data)[:3] == b"\xff\xd8\xff", "a JPEG"

        wrong = await client.call_tool("render", {"template_id": TEMPLATE, "values": {"Price": "3"}})
        assert wrong.is_error and "values.Price" in wrong.content[0].text, wrong

        job = await client.call_tool(
            "render", {"template_id": TEMPLATE, "values": {"quote": QUOTE}, "quality": "480p", "title": "By MCP"}
        )
        assert not job.is_error, job
        job_id = job.structured_content["id"]
        deadline = time.monotonic() + 120
        while True:
            status = (await client.call_tool("job_status", {"job_id": job_id})).structured_content
            if status["status"] != "started":
                break
            assert time.monotonic() < deadline, f"job {job_id} still started: {status}"
            await asyncio.sleep(0.5)
        video = status["videos"][0]
        assert status["status"] == "finished" and video["status"] == "success", status
        assert video["title"] == "By MCP", video
        # Without the token: the address may lead to the object store (distributed mode).
        async with httpx2.AsyncClient(follow_redirects=True) as plain:
            mp4 = (await plain.get(video["url"])).content
        assert mp4[4:8] == b"ftyp", "an MP4"

        uri = f"reelfarm://templates/{TEMPLATE}"
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert uri in [str(r) for r in resources], resources
        document = json.loads((await client.read_resource(uri)).contents[0].text)
        assert document["id"] == TEMPLATE and "json" in document, list(document)
    await http.aclose()
    print(f"mcp: {len(TOOLS)} tools; job {job_id} finished, {len(mp4)} bytes of MP4")


asyncio.run(main())

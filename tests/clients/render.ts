// A job's creation and fetch through openapi-fetch with the types openapi-typescript
// generates from /openapi.json: scripts/clients writes them to ./openapi.d.ts beside a copy
// of this file and type-checks it (tsc --strict --noEmit); it is never run.
import createClient from "openapi-fetch";
import type { components, paths } from "./openapi";

type Job = components["schemas"]["JobJson"];

/** The quote card's quote (examples/templates/quote-card.json). */
const QUOTE = "265178f4-d980-40e9-ab00-e7874fb58e0f";

// @ts-expect-error: not a quality; the generated enum must refuse it.
const unknownQuality: components["schemas"]["JobOptions"]["quality"] = "4k";

export async function render(baseUrl: string, token: string, template: string, quote: string): Promise<Job> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${token}` } });
  const created = await client.POST("/generator/v1/jobs", {
    body: {
      template_id: template,
      options: { quality: "480p" },
      values: [{ external_id: "clients", template_variables: { [QUOTE]: quote } }],
      notifications: [{ type: "callback", payload: { url: "https://example.com/rendered" } }],
    },
  });
  if (created.error) throw new Error(`${created.error.key}: ${created.error.message}`);
  // A dry run answers a quote; this job is not one.
  const answer = created.data;
  if ("dry_run" in answer) throw new Error(`a quote of ${answer.credits} credits`);
  let job: Job = answer;
  while (job.status !== "finished") {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const fetched = await client.GET("/generator/v1/jobs/{id}", { params: { path: { id: job.id } } });
    if (fetched.error) throw new Error(`${fetched.error.key}: ${fetched.error.message}`);
    job = fetched.data;
  }
  const video = job.videos[0];
  if (video.status !== "success") throw new Error(`the render ended ${video.status}: ${video.error}`);
  return job;
}

// Jobs and queues, live: the newest background jobs with their progress, the jobs waiting in each
// queue, and the tasks that failed for good. Refreshed every two seconds while the page is open.

import { get } from "../api.js";
import { failure, fill, h, table, when } from "../dom.js";

const REFRESH_MS = 2000;

function jobsTable(jobs) {
  if (!jobs.length) {
    return h(
      "p",
      { class: "muted" },
      "No jobs yet. The writes and ingests of every hivemem process on this data folder are listed here, " +
        "an agent's `hivemem mcp` over stdio too; a CLI call's are not (its memories are in the store).",
    );
  }
  const rows = jobs.map((job) => [
    h("code", {}, job.id),
    job.kind,
    h("span", { class: `state ${job.state}` }, job.state),
    h("span", {}, h("progress", { max: Math.max(job.total, 1), value: job.done, "aria-hidden": "true" }), ` ${job.done}/${job.total}`),
    when(job.created_at),
    when(job.updated_at),
    job.error ? h("span", { class: "error" }, job.error) : "",
  ]);
  return table("Jobs, newest first", ["Job", "Kind", "State", "Progress", "Created", "Updated", "Error"], rows);
}

function queuesTable(depth) {
  const rows = Object.entries(depth).map(([queue, waiting]) => [queue, String(waiting)]);
  return rows.length ? table("Jobs waiting by queue", ["Queue", "Waiting"], rows) : h("p", { class: "muted" }, "No queues.");
}

function lettersTable(letters) {
  if (!letters.length) return h("p", { class: "muted" }, "None.");
  const rows = letters.map((l) => [when(l.failed_at), l.task, l.job_ids.join(", "), String(l.attempts), l.error]);
  return table("Dead letters", ["Failed", "Task", "Jobs", "Attempts", "Error"], rows);
}

export async function renderJobs(main) {
  const jobs = h("section", { id: "jobs", "aria-live": "polite" });
  const queues = h("section", { id: "queues" });
  const letters = h("section", { id: "dead-letters" });
  fill(main, h("h1", {}, "Jobs"), jobs, h("h2", {}, "Queues"), queues, h("h2", {}, "Failed for good"), letters);
  let timer = null;
  let alive = true;
  async function refresh() {
    const [listed, status, dead] = await Promise.all(
      [get("/v1/jobs", { limit: 50 }), get("/v1/status"), get("/v1/dead-letters", { limit: 20 })].map((p) =>
        p.catch((error) => error),
      ),
    );
    if (!alive) return;
    fill(jobs, listed instanceof Error ? failure(listed) : jobsTable(listed));
    fill(queues, status instanceof Error ? failure(status) : queuesTable(status.queue_depth));
    fill(letters, dead instanceof Error ? failure(dead) : lettersTable(dead));
    timer = setTimeout(refresh, REFRESH_MS);
  }
  await refresh();
  return () => {
    alive = false;
    clearTimeout(timer);
  };
}

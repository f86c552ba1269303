// Knowledge: a search of the documents the agents read (each passage citing its place, opened in
// the document), the documents indexed in a scope (with their errors), an ingest of files, folders
// and URLs watched live as it runs, and the upload of one document from this computer.

import { get, post, upload } from "../api.js";
import { confirmAction, failure, fill, h, notify, number, scopeName, searchForm, table, when } from "../dom.js";
import { landingScope, scopePicker } from "../pickers.js";
import { documentLink } from "./document.js";

const POLL_MS = 500;
// Documents the listing shows at first, and adds with each "More".
const SOURCES_PAGE = 100;
// Characters of the document shown before a cited passage when it is opened.
const LEAD_CHARS = 400;

function citation(hit) {
  const where = [hit.section.join(" › "), hit.page === null ? "" : `page ${hit.page}`].filter(Boolean).join(" · ");
  const opened = documentLink(hit.source, hit.scope, Math.max(0, hit.start - LEAD_CHARS), [hit.start, hit.end]);
  return h(
    "article",
    { class: "result" },
    h("h3", {}, h("a", { href: opened }, hit.title || hit.source)),
    h(
      "p",
      { class: "meta" },
      `score ${number(hit.score, 4)} · ${where || "no heading"} · ${scopeName(hit.scope)} · ${hit.source}`,
    ),
    h("p", { class: "content" }, hit.text),
  );
}

async function searchInto(results, asked, scope) {
  fill(results, h("p", { class: "muted" }, "Searching…"));
  try {
    const answer = await post("/v1/knowledge/search", { query: asked, scope: scope || undefined, limit: 10 });
    fill(
      results,
      h("h2", {}, `${answer.results.length} passages`),
      answer.results.length ? answer.results.map(citation) : h("p", { class: "muted" }, "No passage found."),
    );
  } catch (error) {
    fill(results, failure(error));
  }
}

/** A button that takes `source` out of the index (asking first), then calls `removed()`. */
function deleteButton(source, removed) {
  const name = source.title || source.uri;
  return h(
    "button",
    {
      type: "button",
      class: "danger",
      "aria-label": `delete ${name}`,
      onclick: async () => {
        const sure = await confirmAction(
          "Delete this document from the index?",
          `"${name}" and its ${source.chunk_count} chunks leave ${scopeName(source.scope)}; the document itself ` +
            "is not touched, and indexing it again brings it back.",
          "Delete",
        );
        if (!sure) return;
        try {
          await post("/v1/knowledge/delete", { source: source.uri, scope: source.scope });
          notify(`Deleted "${name}" from the index.`);
          await removed();
        } catch (error) {
          notify(`Could not delete "${name}": ${error.message}`, "error");
        }
      },
    },
    "Delete…",
  );
}

function sourceCells(source, removed) {
  return [
    source.chunk_count
      ? h("a", { href: documentLink(source.uri, source.scope), title: source.uri }, source.title || source.uri)
      : h("span", { title: source.uri }, source.title || source.uri),
    scopeName(source.scope),
    source.format,
    String(source.chunk_count),
    when(source.indexed_at),
    source.last_error ? h("span", { class: "error" }, source.last_error) : "ok",
    deleteButton(source, removed),
  ];
}

/** The documents of `scope` into `listing`, a page at a time ("More" adds the next); `removed()` redraws it. */
async function listSources(listing, scope, removed) {
  const rows = h("tbody", {});
  const more = h("button", { type: "button", hidden: true }, "More");
  const status = h("p", { class: "muted" });
  let offset = 0;
  async function page() {
    more.hidden = true;
    const answer = await get("/v1/knowledge/sources", { scope, offset, limit: SOURCES_PAGE });
    for (const source of answer.sources) {
      rows.append(h("tr", {}, sourceCells(source, removed).map((cell) => h("td", {}, cell))));
    }
    offset = answer.next_offset;
    more.hidden = offset === null;
    fill(status, `${number(rows.children.length)} of ${number(answer.total)} documents shown.`);
    return answer.total;
  }
  more.addEventListener("click", async () => {
    try {
      await page();
    } catch (error) {
      fill(status, failure(error));
    }
  });
  if (!(await page())) {
    fill(listing, h("p", { class: "muted" }, "No documents indexed here yet."));
    return;
  }
  const headings = ["Document", "Scope", "Format", "Chunks", "Indexed", "Status", ""];
  const head = h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col" }, heading))));
  fill(listing, h("table", {}, h("caption", { class: "sr" }, "Indexed documents"), head, rows), status, more);
}

/** Follow job `jobId` until it ends, drawing its progress into `panel`; `alive()` false stops it. */
async function watch(jobId, panel, alive, finished) {
  const bar = h("progress", { max: 1, value: 0, "aria-label": "ingest progress" });
  const words = h("span", { class: "progress-text" });
  fill(panel, h("h3", {}, `Ingest ${jobId}`), bar, " ", words);
  while (alive()) {
    let job;
    try {
      job = await get(`/v1/jobs/${encodeURIComponent(jobId)}`);
    } catch (error) {
      panel.append(failure(error));
      return;
    }
    bar.max = Math.max(job.total, 1);
    bar.value = job.done;
    fill(words, `${job.state}: ${job.done} of ${job.total} documents`);
    panel.dataset.state = job.state;
    if (job.state === "done" || job.state === "failed") {
      if (job.error) panel.append(h("p", { class: "error" }, job.error));
      if (job.result) {
        const items = job.result.items.map((item) => [
          item.id,
          item.outcome,
          item.chunks === undefined ? "—" : String(item.chunks),
          item.error ? h("span", { class: "error" }, item.error) : "",
        ]);
        panel.append(table("Documents of this ingest", ["Document", "Outcome", "Chunks", "Error"], items));
      }
      finished();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export async function renderKnowledge(main, { query }) {
  const scope = query.has("scope") ? query.get("scope") : await landingScope();
  const asked = query.get("q") || "";
  let alive = true;
  const input = h("input", { id: "knowledge-query", type: "search", value: asked, required: true, size: 50 });
  const results = h("section", { id: "passages", "aria-live": "polite" });
  const search = searchForm(
    "knowledge",
    input,
    () => [["scope", scope]],
    h("label", { for: "knowledge-query" }, "Search the documents"),
    input,
    h("button", { type: "submit" }, "Search"),
  );
  const listing = h("section", { id: "sources", "aria-live": "polite" });
  const progress = h("section", { id: "ingest-progress", "aria-live": "polite" });
  async function list() {
    try {
      await listSources(listing, scope, list);
    } catch (error) {
      fill(listing, failure(error));
    }
  }
  const paths = h("textarea", { id: "paths", rows: 3, cols: 60, required: true, placeholder: "/docs/handbook\nhttps://…" });
  const force = h("input", { id: "force", type: "checkbox" });
  const ingestScope = await scopePicker("ingest-scope", scope);
  const ingest = h(
    "form",
    {
      onsubmit: async (event) => {
        event.preventDefault();
        const body = {
          paths: paths.value.split("\n").map((p) => p.trim()).filter(Boolean),
          scope: ingestScope.value || undefined,
          force: force.checked,
        };
        try {
          const job = await post("/v1/knowledge/ingest", body);
          await watch(job.id, progress, () => alive, list);
        } catch (error) {
          fill(progress, failure(error));
        }
      },
    },
    h("label", { for: "paths" }, "Files, folders or URLs, one per line (files only where the server allows)"),
    paths,
    h("div", { class: "inline" }, h("label", { for: "ingest-scope" }, "into"), ingestScope,
      h("label", {}, force, " index again even if unchanged"), h("button", { type: "submit" }, "Ingest")),
  );
  const file = h("input", { id: "file", type: "file", required: true });
  const uploaded = h("p", { "aria-live": "polite" });
  const send = h(
    "form",
    {
      class: "inline",
      onsubmit: async (event) => {
        event.preventDefault();
        const chosen = file.files[0];
        if (!chosen) return;
        fill(uploaded, `Indexing ${chosen.name}…`);
        try {
          const stored = await upload("/v1/knowledge/documents", { name: chosen.name, scope: scope || undefined }, chosen);
          if (stored.kind === "ingest") {
            // Too large to index within the request: the server answered with the job doing it.
            fill(uploaded, `Indexing ${stored.source} in the background…`);
            await watch(stored.id, progress, () => alive, list);
            fill(uploaded, `Upload of ${stored.source}: see its job above.`);
          } else {
            fill(uploaded, `Indexed ${stored.source}: ${stored.chunks} chunks.`);
            await list();
          }
        } catch (error) {
          fill(uploaded, failure(error));
        }
      },
    },
    h("label", { for: "file" }, "Upload a document"),
    file,
    h("button", { type: "submit" }, "Upload"),
  );
  fill(
    main,
    h("h1", {}, "Knowledge"),
    h("p", {}, scope ? `Documents of ${scopeName(scope)} and global.` : "Documents of your default scope and global."),
    search,
    results,
    h("h2", {}, "Documents"),
    listing,
    h("h2", {}, "Ingest"),
    ingest,
    progress,
    send,
    uploaded,
  );
  if (asked) await searchInto(results, asked, scope);
  await list();
  return () => {
    alive = false;
  };
}

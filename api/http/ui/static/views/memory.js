// One memory: its text, provenance and trust, its relations as a graph, its history from the audit
// log; verify that it still holds (clears a stale label in recall); forget it (after a
// confirmation, with a few seconds to take it back before it is sent:
// the server keeps no text of a forgotten memory), and undo a merge, supersede, consolidation or
// archiving that its history records.

import { call, get, post } from "../api.js";
import { confirmAction, facts, failure, fill, h, notify, scopeName, table, when } from "../dom.js";
import { relationGraph } from "../graph.js";

const UNDOABLE = new Set(["merge", "supersede", "consolidate", "archive"]);
const FORGET_DELAY_MS = 5000;
const MAX_NEIGHBOURS = 24;

// The forget waiting out its delay (one at a time): sent at once if the page goes away.
let pendingForget = null;
window.addEventListener("pagehide", () => pendingForget?.send({ keepalive: true }));

function pageOf(id, scope) {
  return `#/memory/${encodeURIComponent(id)}${scope ? `?${new URLSearchParams({ scope })}` : ""}`;
}

async function neighboursOf(memory, scope) {
  const ids = [...new Set(memory.relations.map((r) => (r.source_id === memory.id ? r.target_id : r.source_id)))];
  const found = await Promise.all(
    ids.slice(0, MAX_NEIGHBOURS).map((id) => get(`/v1/memories/${id}`, { scope }).catch(() => null)),
  );
  return new Map(ids.slice(0, MAX_NEIGHBOURS).map((id, i) => [id, found[i]]));
}

function history(records, scope, refresh) {
  if (!records.length) return h("p", { class: "muted" }, "No audit records.");
  const undone = new Set(records.filter((r) => r.action === "undo").map((r) => r.detail.undid));
  const rows = records.map((record) => {
    let action = "";
    if (UNDOABLE.has(record.action) && !undone.has(record.id)) {
      action = h(
        "button",
        {
          type: "button",
          "data-audit": record.id,
          onclick: async () => {
            const sure = await confirmAction(
              `Undo this ${record.action}?`,
              `The memories it changed get back what they were before it (record ${record.id}); the undo is audited.`,
              "Undo",
            );
            if (!sure) return;
            try {
              const done = await post(`/v1/audit/${encodeURIComponent(record.id)}/undo`);
              notify(`Undid the ${done.action}: restored ${done.restored.length} memories.`);
              refresh();
            } catch (error) {
              notify(error.message, "error");
            }
          },
        },
        "Undo",
      );
    } else if (undone.has(record.id)) {
      action = h("span", { class: "muted" }, "undone");
    }
    return [when(record.at), record.action, record.author || "—", JSON.stringify(record.detail), action];
  });
  return table("History of this memory", ["When", "Action", "By", "Detail", ""], rows);
}

function provenance(memory) {
  const trust = memory.source === "user_confirmed" ? "[CONFIRMED] a user vouched for it" : "[INFERRED] verify it";
  return facts([
    ["Scope", scopeName(memory.scope)],
    ["Type", memory.memory_type],
    ["State", memory.valid_to ? `${memory.state}, superseded` : memory.state],
    ["Author", memory.author || "—"],
    ["Source", memory.source],
    ["Trust", trust],
    ["Importance", memory.importance.toFixed(2)],
    ["Created", when(memory.created_at)],
    ["Updated", when(memory.updated_at)],
    ["Last verified", when(memory.verified_at)],
    ["Valid until", memory.valid_to ? when(memory.valid_to) : "still valid"],
    ["Last recalled", when(memory.last_accessed_at)],
    ["Recalled", memory.access_count === 1 ? "once" : `${memory.access_count} times`],
    ["Tags", memory.tags.join(", ") || "—"],
    ["Files", memory.related_files.join(", ") || "—"],
    ["Thread", memory.thread || "—"],
    ["Id", h("code", {}, memory.id)],
  ]);
}

function verifyButton(memory, scope, refresh) {
  return h(
    "button",
    {
      type: "button",
      id: "verify",
      title: "Say it still holds: clears a [STALE?] label in recall (audited)",
      onclick: async () => {
        try {
          await post(`/v1/memories/${encodeURIComponent(memory.id)}/verify`, undefined, { scope });
          notify(`Verified "${memory.title}".`);
          refresh();
        } catch (error) {
          notify(`Could not verify "${memory.title}": ${error.message}`, "error");
        }
      },
    },
    "Verify",
  );
}

function forgetButton(memory, scope, refresh) {
  return h(
    "button",
    {
      type: "button",
      class: "danger",
      id: "forget",
      onclick: async () => {
        const sure = await confirmAction(
          "Forget this memory?",
          `"${memory.title}" will be deleted for good: the audit log keeps its id and a hash, never its text. ` +
            `You have ${FORGET_DELAY_MS / 1000} seconds to undo it.`,
          "Forget",
        );
        if (sure) scheduleForget(memory, scope, refresh);
      },
    },
    "Forget…",
  );
}

function scheduleForget(memory, scope, refresh) {
  pendingForget?.send();
  let timer = null;
  const forget = {
    async send({ keepalive = false } = {}) {
      clearTimeout(timer);
      if (pendingForget === forget) pendingForget = null;
      try {
        await call("DELETE", `/v1/memories/${memory.id}`, { query: { confirm: "true", scope }, keepalive });
        notify(`Forgot "${memory.title}".`);
      } catch (error) {
        notify(`Could not forget "${memory.title}": ${error.message}`, "error");
      }
      // Drawn again only if its page is still the one shown (the user may have moved on meanwhile).
      if (location.hash.startsWith(`#/memory/${encodeURIComponent(memory.id)}`)) refresh();
    },
    cancel() {
      clearTimeout(timer);
      pendingForget = null;
      notify(`Kept "${memory.title}".`);
    },
  };
  pendingForget = forget;
  timer = setTimeout(() => forget.send(), FORGET_DELAY_MS);
  const undo = h("button", { type: "button", id: "undo-forget", onclick: () => forget.cancel() }, "Undo");
  notify(h("span", {}, `Forgetting "${memory.title}"… `, undo), "warn");
  undo.focus();
}

export async function renderMemory(main, { id, query }) {
  const scope = query.get("scope") || "";
  const refresh = () => renderMemory(main, { id, query });
  fill(main, h("p", { class: "muted" }, "Loading…"));
  const [memory, records] = await Promise.all([
    get(`/v1/memories/${encodeURIComponent(id)}`, { scope }).catch((error) => error),
    get("/v1/audit", { memory_id: id, scope }).catch((error) => error),
  ]);
  const historyPart = records instanceof Error ? failure(records) : history(records, scope, refresh);
  if (memory instanceof Error) {
    const forgotten = !(records instanceof Error) && records.some((r) => r.action === "forget");
    fill(
      main,
      h("h1", {}, forgotten ? "Forgotten" : "No such memory"),
      forgotten
        ? h("p", {}, `Memory ${id} was forgotten; only its audit records remain.`)
        : failure(memory),
      h("h2", {}, "History"),
      historyPart,
    );
    return;
  }
  const neighbours = await neighboursOf(memory, scope);
  const titleOf = (other) => (other === memory.id ? memory.title : (neighbours.get(other)?.title ?? other));
  fill(
    main,
    h("h1", {}, memory.title),
    h("div", { class: "toolbar" }, verifyButton(memory, scope, refresh), forgetButton(memory, scope, refresh)),
    h("section", { class: "columns" }, h("pre", { class: "content" }, memory.content), provenance(memory)),
    h("h2", {}, `Relations (${memory.relations.length})`),
    memory.relations.length
      ? relationGraph(memory, neighbours, memory.relations, (other) => pageOf(other, scope))
      : h("p", { class: "muted" }, "No relations."),
    memory.relations.length
      ? table(
          "Relations",
          ["From", "Type", "To", "Strength"],
          memory.relations.map((r) => [
            h("a", { href: pageOf(r.source_id, scope) }, titleOf(r.source_id)),
            r.type,
            h("a", { href: pageOf(r.target_id, scope) }, titleOf(r.target_id)),
            r.strength.toFixed(2),
          ]),
        )
      : "",
    Object.keys(memory.details).length ? [h("h2", {}, "Details"), h("pre", {}, JSON.stringify(memory.details, null, 2))] : "",
    h("h2", {}, "History"),
    historyPart,
  );
}

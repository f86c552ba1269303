// A scope's memories, newest first, page by page (GET /v1/memories), filtered by type, state,
// tag and author; with a scope chosen, first the ones that may be stale (GET /v1/status), for a
// person to open and verify or forget.

import { get } from "../api.js";
import { failure, fill, h, scopeName, when } from "../dom.js";
import { choicePicker, landingScope, scopePicker } from "../pickers.js";
import { memoryLink } from "./search.js";

const FILTERS = ["scope", "type", "state", "tag", "author"];

export async function renderMemories(main, { query }) {
  const chosen = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) || ""]));
  if (!query.has("scope")) chosen.scope = await landingScope();
  const scopeSelect = await scopePicker("scope", chosen.scope);
  const typeSelect = await choicePicker("type", "MemoryType", chosen.type, "any type");
  const stateSelect = await choicePicker("state", "MemoryState", chosen.state, "any state");
  const tagInput = h("input", { id: "tag", name: "tag", value: chosen.tag, placeholder: "tag", size: 12 });
  const authorInput = h("input", { id: "author", name: "author", value: chosen.author, placeholder: "author", size: 12 });
  const form = h(
    "form",
    {
      class: "inline",
      onsubmit: (event) => {
        event.preventDefault();
        const fields = [scopeSelect, typeSelect, stateSelect, tagInput, authorInput];
        const next = new URLSearchParams(fields.filter((f) => f.value.trim()).map((f) => [f.name, f.value.trim()]));
        location.hash = `#/memories?${next}`;
      },
    },
    h("label", { for: "scope" }, "Scope"),
    scopeSelect,
    typeSelect,
    stateSelect,
    tagInput,
    authorInput,
    h("button", { type: "submit" }, "Filter"),
  );
  const list = h("tbody", {});
  const more = h("button", { type: "button", hidden: true }, "More");
  const status = h("p", { class: "muted", "aria-live": "polite" });
  const stale = h("section", { id: "stale" });
  fill(
    main,
    h("h1", {}, "Memories"),
    form,
    stale,
    h(
      "table",
      {},
      h("caption", { class: "sr" }, "Memories, newest first"),
      h(
        "thead",
        {},
        h("tr", {}, ["Title", "Type", "State", "Scope", "Author", "Created"].map((t) => h("th", { scope: "col" }, t))),
      ),
      list,
    ),
    status,
    more,
  );
  if (chosen.scope) staleList(stale, chosen.scope);
  let cursor = null;
  async function page() {
    more.hidden = true;
    fill(status, "Loading…");
    let answer;
    try {
      answer = await get("/v1/memories", { ...chosen, cursor, limit: 50 });
    } catch (error) {
      fill(status, failure(error));
      return;
    }
    for (const memory of answer.memories) {
      const row = [
        memoryLink(memory, memory.scope),
        memory.memory_type,
        memory.valid_to ? `${memory.state}, superseded` : memory.state,
        scopeName(memory.scope),
        memory.author || "—",
        when(memory.created_at),
      ];
      list.append(h("tr", {}, row.map((cell) => h("td", {}, cell))));
    }
    cursor = answer.next_cursor;
    more.hidden = !cursor;
    fill(status, list.children.length ? `${list.children.length} shown${cursor ? "" : ", all"}.` : "No memories.");
  }
  more.addEventListener("click", page);
  await page();
}

async function staleList(section, scope) {
  let answer;
  try {
    answer = await get("/v1/status", { scope });
  } catch (error) {
    fill(section, failure(error));
    return;
  }
  if (!answer.stale.length) return;
  const rows = answer.stale.map((m) =>
    h("tr", {}, [memoryLink(m, scope), m.memory_type, `${m.days} days ago`].map((cell) => h("td", {}, cell))),
  );
  fill(
    section,
    h("h2", {}, `May be stale (${answer.stale.length})`),
    h("p", { class: "muted" }, "Not verified for longer than their type holds: open each to verify or forget it."),
    h(
      "table",
      {},
      h("caption", { class: "sr" }, "Memories that may be stale"),
      h("thead", {}, h("tr", {}, ["Title", "Type", "Last verified"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows),
    ),
  );
}

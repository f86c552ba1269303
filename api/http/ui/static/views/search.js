// Recall by meaning, as agents do (POST /v1/remember), with each result's score decomposition
// (`explain`): which legs found it, at which rank, and what decay, trust and supersession did.

import { post } from "../api.js";
import { facts, failure, fill, h, number, scopeName, searchForm } from "../dom.js";
import { choicePicker, landingScope, scopePicker } from "../pickers.js";

function explanation(explain) {
  const rows = Object.entries(explain).map(([key, value]) => {
    const bar =
      typeof value === "number" && value >= 0 && value <= 1 && !key.endsWith("_rank")
        ? h("meter", { min: 0, max: 1, value, "aria-hidden": "true" })
        : "";
    return [key, h("span", {}, value === null ? "—" : number(value, 4), " ", bar)];
  });
  return h(
    "details",
    { class: "explain" },
    h("summary", {}, "Why this score"),
    h(
      "table",
      {},
      h("caption", { class: "sr" }, "Score decomposition"),
      h("tbody", {}, rows.map(([key, value]) => h("tr", {}, h("th", { scope: "row" }, key), h("td", {}, value)))),
    ),
  );
}

export function memoryLink(result, scope) {
  const query = scope ? `?${new URLSearchParams({ scope })}` : "";
  return h("a", { href: `#/memory/${encodeURIComponent(result.id)}${query}` }, result.title);
}

function resultCard(result, scope) {
  return h(
    "article",
    { class: "result" },
    h(
      "h3",
      {},
      memoryLink(result, scope),
      " ",
      h("span", { class: `label ${result.label === "[CONFIRMED]" ? "confirmed" : "inferred"}` }, result.label),
    ),
    h(
      "p",
      { class: "meta" },
      `score ${number(result.score, 4)} · ${result.memory_type} · ${scopeName(result.scope)} · by ${result.author || "—"}`,
      result.valid_to ? " · superseded" : "",
      result.linked_from ? ` · ${result.relation} of ${result.linked_from.slice(0, 8)}` : "",
    ),
    h("p", { class: "content" }, result.content),
    result.explain ? explanation(result.explain) : "",
  );
}

export async function renderSearch(main, { query }) {
  const asked = query.get("q") || "";
  const scope = query.has("scope") ? query.get("scope") : await landingScope();
  const type = query.get("type") || "";
  const input = h("input", { id: "query", name: "q", type: "search", value: asked, required: true, size: 50 });
  const typeSelect = await choicePicker("type", "MemoryType", type, "any type");
  const scopeSelect = await scopePicker("scope", scope);
  const results = h("section", { id: "results", "aria-live": "polite" });
  const form = searchForm(
    "search",
    input,
    () => [
      ["scope", scopeSelect.value],
      ["type", typeSelect.value],
    ],
    h("label", { for: "query" }, "Ask"),
    input,
    h("label", { for: "scope" }, "in"),
    scopeSelect,
    typeSelect,
    h("button", { type: "submit" }, "Search"),
  );
  fill(main, h("h1", {}, "Search"), form, results);
  input.focus();
  if (!asked) return;
  fill(results, h("p", { class: "muted" }, "Searching…"));
  let answer;
  try {
    answer = await post("/v1/remember", {
      query: asked,
      scope: scope || undefined,
      memory_types: type ? [type] : undefined,
      limit: 20,
      explain: true,
    });
  } catch (error) {
    fill(results, failure(error));
    return;
  }
  fill(
    results,
    h("h2", {}, `${answer.results.length} results`),
    facts([["Scopes searched", answer.scopes.map(scopeName).join(", ")]]),
    answer.results.map((result) => resultCard(result, scope)),
    answer.related.length ? [h("h2", {}, "Linked to these"), answer.related.map((r) => resultCard(r, scope))] : "",
  );
}

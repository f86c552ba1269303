// The scopes the caller can read, with how many memories each holds, by type and by state, and
// how many documents are indexed there (and how many failed to be).

import { get } from "../api.js";
import { fill, h, scopeName, table } from "../dom.js";

function counts(byKey) {
  return Object.entries(byKey)
    .filter(([, count]) => count > 0)
    .map(([key, count]) => `${key} ${count}`)
    .join(", ");
}

export async function renderScopes(main) {
  fill(main, h("h1", {}, "Scopes"), h("p", { class: "muted" }, "Loading…"));
  const scopes = await get("/v1/scopes");
  const total = scopes.reduce((sum, scope) => sum + scope.memories, 0);
  const documents = scopes.reduce((sum, scope) => sum + scope.documents, 0);
  const rows = scopes.map((scope) => {
    const query = new URLSearchParams({ scope: scope.scope }).toString();
    return [
      h("a", { href: `#/memories?${query}` }, scopeName(scope.scope)),
      String(scope.memories),
      counts(scope.by_type),
      counts(scope.by_state),
      scope.documents || scope.documents_failed
        ? h(
            "a",
            { href: `#/knowledge?${query}`, title: `${scope.chunks} chunks` },
            scope.documents_failed ? `${scope.documents} (${scope.documents_failed} failed)` : String(scope.documents),
          )
        : "0",
      h("a", { href: `#/search?${query}`, "aria-label": `search ${scopeName(scope.scope)}` }, "search"),
    ];
  });
  fill(
    main,
    h("h1", {}, "Scopes"),
    h("p", {}, `${total} memories and ${documents} documents in ${scopes.length} scopes you can read.`),
    scopes.length
      ? table("Scopes and their sizes", ["Scope", "Memories", "By type", "By state", "Documents", ""], rows)
      : h("p", { class: "muted" }, "No memories or documents yet."),
  );
}

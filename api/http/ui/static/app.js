// The dashboard's frame: who is calling, the sections, keyboard shortcuts, and routing on the
// URL's fragment (#/section/…?query), so every page has an address and Back works.

import { ApiError, get, setToken, token } from "./api.js";
import { clearNotice, failure, fill, h } from "./dom.js";
import { renderAdmin } from "./views/admin.js";
import { renderDocument } from "./views/document.js";
import { renderJobs } from "./views/jobs.js";
import { renderKnowledge } from "./views/knowledge.js";
import { renderMemories } from "./views/memories.js";
import { renderMemory } from "./views/memory.js";
import { renderScopes } from "./views/scopes.js";
import { renderSearch } from "./views/search.js";

const VIEWS = {
  "": renderScopes,
  search: renderSearch,
  memories: renderMemories,
  memory: renderMemory,
  knowledge: renderKnowledge,
  document: renderDocument,
  jobs: renderJobs,
  admin: renderAdmin,
};
const SHORTCUTS = { s: "#/", "/": "#/search", m: "#/memories", k: "#/knowledge", j: "#/jobs", a: "#/admin" };

let leaving = null; // what the current view stops when the page changes (its polling)
// The latest navigation. Pages render asynchronously: one asked for earlier that finishes later
// (a sign-in's scopes page, then a key press for jobs, on a slow server) must not draw over it.
let shown = 0;

/** The route in the fragment: `#/memory/ID?scope=S` → {view: "memory", id: "ID", query}. */
function route() {
  const [path, search = ""] = location.hash.replace(/^#\/?/, "").split("?");
  const [view = "", ...rest] = path.split("/");
  return { view, id: decodeURIComponent(rest.join("/")), query: new URLSearchParams(search) };
}

async function show() {
  const ticket = ++shown;
  if (leaving) leaving();
  leaving = null;
  clearNotice();
  const main = document.getElementById("main");
  const { view, id, query } = route();
  for (const link of document.querySelectorAll("nav a")) {
    const current =
      link.dataset.view === (view || "scopes") ||
      (view === "memory" && link.dataset.view === "memories") ||
      (view === "document" && link.dataset.view === "knowledge");
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const who = await whoami();
  if (!who || ticket !== shown) return;
  const render = VIEWS[view];
  if (!render) {
    fill(main, h("h1", {}, "Not found"), h("p", {}, "No such page. ", h("a", { href: "#/" }, "Back to the scopes.")));
    return;
  }
  // Each page draws into a container of its own: a later navigation replaces it, so what an
  // earlier one draws late lands in a container no longer shown.
  const page = h("div", {});
  fill(main, page);
  try {
    const stop = (await render(page, { id, query, who })) || null;
    if (ticket === shown) leaving = stop;
    else if (stop) stop(); // a page left before it was ready stops its polling at once
  } catch (error) {
    if (ticket === shown) fill(page, failure(error));
  }
}

/** The caller (GET /v1/whoami); on a refusal, the sign-in form instead of the page. */
async function whoami() {
  const label = document.getElementById("who");
  try {
    const who = await get("/v1/whoami");
    fill(
      label,
      `${who.principal}`,
      token() ? h("button", { type: "button", class: "link", onclick: signOut }, "Sign out") : "",
    );
    return who;
  } catch (error) {
    fill(label, "");
    if (error instanceof ApiError && error.status === 401) signIn(error);
    else fill(document.getElementById("main"), failure(error));
    return null;
  }
}

function signIn(refusal) {
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true, size: 48 });
  const form = h(
    "form",
    {
      class: "signin",
      onsubmit: (event) => {
        event.preventDefault();
        setToken(input.value.trim());
        show();
      },
    },
    h("h1", {}, "Sign in"),
    h("p", {}, "This is a team server: every request needs a token (hivemem token create NAME)."),
    token() ? h("p", { class: "error", role: "alert" }, `The token was refused: ${refusal.message}`) : "",
    h("label", { for: "token" }, "Token"),
    input,
    h("button", { type: "submit" }, "Sign in"),
  );
  fill(document.getElementById("main"), form);
  input.focus();
}

function signOut() {
  setToken("");
  show();
}

function typing(target) {
  return target.closest("input, textarea, select, [contenteditable]") !== null;
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
  if (document.querySelector("dialog[open]")) return;
  const target = SHORTCUTS[event.key];
  if (!target) return;
  event.preventDefault();
  if (event.key === "/" && route().view === "search") document.getElementById("query")?.focus();
  else location.hash = target;
});

window.addEventListener("hashchange", show);
show();

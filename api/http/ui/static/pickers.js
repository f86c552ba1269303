// The choices forms offer: the scopes the caller can read, and the API's own enumerations.

import { get } from "./api.js";
import { h, scopeName } from "./dom.js";
import { choices } from "./schema.js";

/** A <select> of "any" and the values of the API enumeration `name`. */
export async function choicePicker(id, name, chosen, anyLabel) {
  return h(
    "select",
    { id, name: id },
    ["", ...(await choices(name))].map((value) => h("option", { value, selected: value === chosen }, value || anyLabel)),
  );
}

/**
 * The scope a page opens on when its address names none: the project scope holding the most
 * memories and documents that the caller can read, else "" (the caller's default). A first look
 * at the dashboard showed the global scope's 2 memories while the project held 19.
 */
export async function landingScope() {
  let scopes = [];
  try {
    scopes = await get("/v1/scopes");
  } catch {
    return "";
  }
  const projects = scopes.filter((s) => s.scope !== "" && s.memories + s.documents > 0);
  projects.sort((a, b) => b.memories + b.documents - (a.memories + a.documents));
  return projects.length ? projects[0].scope : "";
}

/** A <select> of the scopes the caller can read ("" = the caller's default scope). */
export async function scopePicker(id, chosen) {
  const select = h("select", { id, name: "scope" }, h("option", { value: "" }, "your default scope"));
  let scopes = [];
  try {
    scopes = await get("/v1/scopes");
  } catch {
    // The picker still works with the default; the view shows the error of its own call.
  }
  const names = scopes.map((scope) => scope.scope);
  if (chosen && !names.includes(chosen)) names.push(chosen);
  for (const name of names) {
    select.append(h("option", { value: name, selected: name === chosen }, scopeName(name)));
  }
  return select;
}

// Building the page. Data only ever enters it as text nodes and attribute values, never as markup.

/** An element: `h("a", {href: "#/"}, "text", child, …)`; `on*` attributes are event listeners. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace what `element` holds. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

export function scopeName(scope) {
  return scope === "" ? "global" : scope;
}

export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return h("time", { datetime: iso, title: iso }, date.toLocaleString());
}

export function number(value, digits = 3) {
  return typeof value === "number" && !Number.isInteger(value) ? value.toFixed(digits) : String(value);
}

/** A table of `rows`, each `columns` cells (text, nodes), with a caption for screen readers. */
export function table(caption, headings, rows) {
  return h(
    "table",
    {},
    h("caption", { class: "sr" }, caption),
    h("thead", {}, h("tr", {}, headings.map((heading) => h("th", { scope: "col" }, heading)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))),
  );
}

/**
 * A search form whose submit moves to `#/view?q=…`: the query from `input`, and the pairs
 * `parameters()` gives ([name, value], empty values left out), so every search has an address.
 */
export function searchForm(view, input, parameters, ...controls) {
  return h(
    "form",
    {
      class: "inline",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        const next = new URLSearchParams({ q: input.value.trim() });
        for (const [name, value] of parameters()) if (value) next.set(name, value);
        location.hash = `#/${view}?${next}`;
      },
    },
    ...controls,
  );
}

/** A key/value list. */
export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.flatMap(([key, value]) => [h("dt", {}, key), h("dd", {}, value)]));
}

/** A failed call, shown where its data would have been. */
export function failure(error) {
  const hint = error.status === 403 ? " Your token does not allow this." : "";
  return h("p", { class: "error", role: "alert" }, `${error.message || error}${hint}`);
}

/** Ask before something that cannot be taken back; resolves true when confirmed. */
export function confirmAction(title, text, action) {
  const dialog = document.getElementById("confirm");
  fill(document.getElementById("confirm-title"), title);
  fill(document.getElementById("confirm-text"), text);
  fill(document.getElementById("confirm-ok"), action);
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
  });
}

/** A short message at the top of the page. */
export function notify(text, kind = "ok") {
  const notice = document.getElementById("notice");
  notice.className = `notice ${kind}`;
  fill(notice, text);
  notice.hidden = false;
}

export function clearNotice() {
  document.getElementById("notice").hidden = true;
}

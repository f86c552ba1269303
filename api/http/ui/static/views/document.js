// One indexed document, read a page at a time (POST /v1/knowledge/read): its text under its
// headings (and PDF pages), with the passage a search result cited marked, and links to the pages
// before and after.

import { post } from "../api.js";
import { facts, failure, fill, h, scopeName } from "../dom.js";

const PAGE_CHARS = 6000;

/** The address of `source` read from `offset`, with the cited range `mark` = [start, end] marked. */
export function documentLink(source, scope, offset = 0, mark = null) {
  const query = new URLSearchParams({ source });
  if (scope) query.set("scope", scope);
  if (offset) query.set("offset", String(offset));
  if (mark) query.set("mark", `${mark[0]}-${mark[1]}`);
  return `#/document?${query}`;
}

/** `text` (which starts at document offset `from`) as text nodes, the range `mark` in a <mark>. */
function marked(text, from, mark) {
  if (!mark) return [text];
  const start = Math.max(0, Math.min(text.length, mark[0] - from));
  const end = Math.max(start, Math.min(text.length, mark[1] - from));
  if (start === end) return [text];
  return [text.slice(0, start), h("mark", {}, text.slice(start, end)), text.slice(end)];
}

function heading(section) {
  const path = section.section.join(" › ");
  const page = section.page === null || section.page === undefined ? "" : `page ${section.page}`;
  return h("h2", { class: "section" }, [path, page].filter(Boolean).join(" · ") || "(before the first heading)");
}

/** The page's text cut at its section starts, each part under its heading. */
function body(answer, mark) {
  const sections = answer.sections.length ? answer.sections : [{ start: answer.offset, section: [], page: null }];
  const end = answer.offset + answer.text.length;
  return sections.map((section, i) => {
    const until = i + 1 < sections.length ? sections[i + 1].start : end;
    // The blank lines between sections are the text's own; cut at the end only, so offsets hold.
    const text = answer.text.slice(section.start - answer.offset, until - answer.offset).trimEnd();
    return h("section", {}, heading(section), h("pre", { class: "content" }, marked(text, section.start, mark)));
  });
}

export async function renderDocument(main, { query }) {
  const source = query.get("source") || "";
  const scope = query.get("scope") || "";
  const offset = Number.parseInt(query.get("offset") || "0", 10) || 0;
  const range = /^(\d+)-(\d+)$/.exec(query.get("mark") || "");
  const mark = range ? [Number(range[1]), Number(range[2])] : null;
  if (!source) {
    fill(main, h("h1", {}, "Document"), h("p", {}, "No document named. ", h("a", { href: "#/knowledge" }, "Knowledge")));
    return;
  }
  let answer;
  try {
    answer = await post("/v1/knowledge/read", { source, scope: scope || undefined, offset, limit: PAGE_CHARS });
  } catch (error) {
    fill(main, h("h1", {}, "Document"), failure(error));
    return;
  }
  const shownTo = answer.offset + answer.text.length;
  const earlier = answer.offset > 0 ? Math.max(0, answer.offset - PAGE_CHARS) : null;
  const pager = h(
    "p",
    { class: "inline pager" },
    earlier === null ? "" : h("a", { href: documentLink(source, scope, earlier, mark), rel: "prev" }, "← Earlier"),
    answer.next_offset === null ? "" : h("a", { href: documentLink(source, scope, answer.next_offset, mark), rel: "next" }, "Later →"),
  );
  fill(
    main,
    h("h1", {}, answer.title || source),
    facts([
      ["Source", source],
      ["Scope", scope ? scopeName(scope) : "your default scope and global"],
      ["Format", answer.format],
      ["Shown", `characters ${answer.offset.toLocaleString()}–${shownTo.toLocaleString()} of ${answer.total_chars.toLocaleString()}`],
    ]),
    pager,
    body(answer, mark),
    pager.cloneNode(true),
  );
}

// A memory and the memories its relations reach, drawn as an SVG graph: the memory in the middle,
// its neighbours on a circle around it, one arrow per relation (source → target) named by its type.
// Each node links to that memory's page, so the graph is walked with the keyboard (Tab, Enter).

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 720;
const HEIGHT = 420;
const RADIUS = 150;

function s(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  for (const child of children) element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return element;
}

function short(text, length = 26) {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/**
 * The graph of `center` (a memory), `neighbours` (id → memory, or null when it could not be read)
 * and `relations` ({source_id, target_id, type}); `href(id)` is a node's link.
 */
export function relationGraph(center, neighbours, relations, href) {
  const ids = [...neighbours.keys()];
  const at = new Map([[center.id, { x: WIDTH / 2, y: HEIGHT / 2 }]]);
  ids.forEach((id, i) => {
    const angle = (2 * Math.PI * i) / ids.length - Math.PI / 2;
    at.set(id, { x: WIDTH / 2 + RADIUS * 1.6 * Math.cos(angle), y: HEIGHT / 2 + RADIUS * Math.sin(angle) });
  });
  const svg = s(
    "svg",
    { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-labelledby": "graph-title", class: "graph" },
    s("title", { id: "graph-title" }, `${center.title} and ${ids.length} related memories`),
    s(
      "defs",
      {},
      s(
        "marker",
        { id: "arrow", viewBox: "0 0 10 10", refX: 30, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto" },
        s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }),
      ),
    ),
  );
  for (const relation of relations) {
    const from = at.get(relation.source_id);
    const to = at.get(relation.target_id);
    if (!from || !to) continue;
    svg.append(
      s(
        "g",
        { class: "edge", "data-type": relation.type },
        s("line", { x1: from.x, y1: from.y, x2: to.x, y2: to.y, "marker-end": "url(#arrow)" }),
        s("text", { x: (from.x + to.x) / 2, y: (from.y + to.y) / 2 - 6, "text-anchor": "middle" }, relation.type),
      ),
    );
  }
  const nodes = [[center.id, center], ...neighbours.entries()];
  for (const [id, memory] of nodes) {
    const { x, y } = at.get(id);
    const title = memory ? memory.title : `${id.slice(0, 8)}…`;
    const node = s(
      "a",
      { href: href(id), class: id === center.id ? "node center" : "node", "data-id": id },
      s("title", {}, memory ? `${memory.title} (${memory.memory_type})` : id),
      s("circle", { cx: x, cy: y, r: 22 }),
      s("text", { x, y: y + 38, "text-anchor": "middle" }, short(title)),
    );
    svg.append(node);
  }
  return svg;
}

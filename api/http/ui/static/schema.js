// The API's own vocabularies (memory types, states, job states), read from its OpenAPI document
// once, so the dashboard's choices never drift from what the server accepts.

let document_ = null;

async function components() {
  if (!document_) {
    document_ = fetch("/openapi.json").then((answer) => (answer.ok ? answer.json() : { components: { schemas: {} } }));
  }
  return (await document_).components.schemas;
}

/** The values of the enumeration `name` (e.g. "MemoryType"); empty when the document lacks it. */
export async function choices(name) {
  return (await components())[name]?.enum ?? [];
}

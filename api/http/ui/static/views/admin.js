// Tokens and grants (admins on every scope): who may read, write or administer which scopes;
// create a token (shown once), revoke one after a confirmation.

import { call, get, post } from "../api.js";
import { confirmAction, facts, failure, fill, h, notify, table, when } from "../dom.js";

function grantsOf(text) {
  return text.split(/[\s,]+/).filter(Boolean);
}

export async function renderAdmin(main, { who }) {
  const listing = h("section", { id: "tokens" });
  const created = h("section", { id: "created", "aria-live": "polite" });
  const refresh = () => renderAdmin(main, { who });
  const name = h("input", { id: "token-name", required: true, size: 20, placeholder: "alice" });
  const grants = h("input", { id: "token-grants", size: 40, placeholder: "github.com/acme/*:write" });
  const form = h(
    "form",
    {
      class: "inline",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const issued = await post("/v1/tokens", { name: name.value.trim(), grants: grantsOf(grants.value) });
          fill(
            created,
            h("p", {}, `Token for ${issued.principal} (shown this once; copy it now):`),
            h("pre", { class: "secret" }, issued.token),
          );
          await list();
        } catch (error) {
          fill(created, failure(error));
        }
      },
    },
    h("label", { for: "token-name" }, "Name"),
    name,
    h("label", { for: "token-grants" }, "Grants"),
    grants,
    h("button", { type: "submit" }, "Create token"),
  );
  async function list() {
    let tokens;
    try {
      tokens = await get("/v1/tokens");
    } catch (error) {
      fill(listing, failure(error));
      return;
    }
    const rows = tokens.map((token) => [
      token.principal,
      token.grants.join(", "),
      token.personal_scope,
      when(token.created_at),
      token.created_by,
      token.revoked_at ? when(token.revoked_at) : token.expires_at ? `expires ${new Date(token.expires_at).toLocaleString()}` : "active",
      token.revoked_at
        ? ""
        : h(
            "button",
            {
              type: "button",
              class: "danger",
              onclick: async () => {
                const sure = await confirmAction(
                  `Revoke ${token.principal}'s token?`,
                  "Every request with it is refused from now on. This cannot be undone: a new token must be created.",
                  "Revoke",
                );
                if (!sure) return;
                try {
                  await call("DELETE", `/v1/tokens/${encodeURIComponent(token.id)}`);
                  notify(`Revoked ${token.principal}'s token.`);
                  refresh();
                } catch (error) {
                  notify(error.message, "error");
                }
              },
            },
            "Revoke…",
          ),
    ]);
    fill(listing, table("Tokens", ["Principal", "Grants", "Personal scope", "Created", "By", "Status", ""], rows));
  }
  fill(
    main,
    h("h1", {}, "Tokens and grants"),
    facts([
      ["You are", who.principal],
      ["Your grants", who.grants.join(", ") || "—"],
    ]),
    who.manages_tokens ? [h("h2", {}, "New token"), form, created, h("h2", {}, "Tokens"), listing] : h("p", {}, "Only an admin on every scope (*) manages tokens."),
  );
  if (who.manages_tokens) await list();
}

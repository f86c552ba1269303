"""The gateway, by room: ``main`` (the ASGI app: REST and MCP over HTTP), ``http`` (routes, who may
call, the dashboard, metrics), ``mcp`` (the tools, over stdio or HTTP), ``services`` (what REST,
MCP and the CLI share), ``cli`` (the ``hivemem`` command), ``process`` (the processes themselves),
and ``errors`` (each error as an HTTP status and an MCP tool error)."""

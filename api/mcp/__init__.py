"""The MCP transport: the tools over a service (``server``), the streamable-HTTP endpoint mounted in
the app (``endpoint``), the knowledge tool, compact schemas, and a session's default thread."""

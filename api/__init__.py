"""The gateway: the FastAPI app (REST + MCP at /mcp), the stdio MCP server and the CLI."""

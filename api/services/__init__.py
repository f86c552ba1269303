"""The application services REST, MCP and the CLI share: memories (``MemoryService``, which also
opens and owns the store, the embedder and the runners), knowledge, tokens, operators' passes,
export and import, undo; and ``Caller``, who is asking and what they may do."""

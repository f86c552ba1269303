"""Job functions, the embedding model, and the runners that execute jobs (in-process today)."""

"""The HTTP transport: the REST routes and their dependencies, who may call (tokens, the Host and
Origin guard, the throttle of bad tokens), the dashboard and the API docs pages, Prometheus metrics."""

"""The server and worker processes themselves: CPU priority, handing memory back, shutdown on
SIGTERM, and the OpenTelemetry tracer."""

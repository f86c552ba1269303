"""Client hooks: the commands an agent's client runs on its own events (``hivemem hook EVENT``),
so that an agent benefits from its memory without being told to call a tool.

``command`` reads the client's JSON on stdin and answers on stdout; ``events`` says what each event
injects (the session's briefing, the prompt's relevant memories, a reminder to save a handoff);
``session_log`` keeps what a hook must know of the session between calls, and the hooks' log. A
hook talks to a running server over REST, never opens the store itself, and never blocks its
client: whatever goes wrong, it exits 0 with nothing on stdout and a line in its log.
"""

"""What the hooks keep between calls: when each client session started (so that a handoff saved
"in this session" can be told from an older one) and whether it was reminded; and the hooks' log.

Both live under ``$XDG_STATE_HOME/hivemem`` (``~/.local/state/hivemem``): state of this machine's
sessions, not memory. A session's file is named by a hash of its id, so a client's id can never
name a path.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["SessionState", "hooks_log", "log_line", "state_dir"]

_LOG_MAX_BYTES = 256 * 1024  # the log keeps its newest quarter megabyte
_SESSIONS_KEPT_S = 14 * 24 * 3600  # sessions older than this are forgotten when a new one starts


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "hivemem"


def hooks_log() -> Path:
    """The file each hook's failures are logged to."""
    return state_dir() / "hooks.log"


def log_line(event: str, message: str) -> None:
    """Append one line to the hooks' log (cut to its newest part when it grows); never raises."""
    try:
        path = hooks_log()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > _LOG_MAX_BYTES:
            kept = path.read_bytes()[-_LOG_MAX_BYTES // 2 :]
            path.write_bytes(kept[kept.find(b"\n") + 1 :])
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with path.open("a", encoding="utf-8") as log:
            log.write(f"{stamp} {event}: {' '.join(message.split())[:500]}\n")
    except OSError:
        pass


@dataclass
class SessionState:
    """One client session as the hooks saw it."""

    started_at: float
    reminded: bool = False

    @staticmethod
    def _path(session_id: str) -> Path:
        digest = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
        return state_dir() / "sessions" / f"{digest}.json"

    @classmethod
    def load(cls, session_id: str) -> SessionState | None:
        """The session's state, or None when its start was not seen (or its file is unreadable)."""
        try:
            raw = json.loads(cls._path(session_id).read_text(encoding="utf-8"))
            return cls(started_at=float(raw["started_at"]), reminded=bool(raw.get("reminded", False)))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @classmethod
    def begin(cls, session_id: str) -> SessionState:
        """A session seen starting now (a resumed or compacted one keeps its first start)."""
        known = cls.load(session_id)
        if known is not None:
            return known
        state = cls(started_at=time.time())
        state.save(session_id)
        _forget_old(cls._path(session_id).parent)
        return state

    def save(self, session_id: str) -> None:
        path = self._path(session_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            staging = path.with_suffix(f".{os.getpid()}.tmp")
            staging.write_text(json.dumps(asdict(self)), encoding="utf-8")
            staging.replace(path)
        except OSError as exc:
            log_line("session", f"could not keep the session's state: {exc}")


def _forget_old(folder: Path) -> None:
    cutoff = time.time() - _SESSIONS_KEPT_S
    try:
        for path in folder.glob("*.json"):
            if path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)
    except OSError:
        pass

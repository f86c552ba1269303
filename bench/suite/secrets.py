"""``hivemem bench secrets``: how well the write-time secret detector tells credentials from what only
looks like one, and what scanning costs.

The set (``bench/secrets/cases.jsonl``) holds sentences an agent might memorize, each with a
placeholder filled here with a value of the provider's real shape (random characters in its
alphabet and length, from a fixed seed): real-shaped secrets, and look-alikes that must pass
(UUIDs, commit SHAs, digests, base64 images, public keys, placeholders, prose about keys). The
values are made at run time so that no string in the repository is a credential's shape.
Reports precision and recall over the set, every miss and every false alarm by kind, and the
scanner's time on real prose and on crafted text.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.suite.data_files import json_lines, reading
from hivemem.secret_scan import find_secrets

__all__ = ["fill", "run_secrets_bench", "score_cases"]

_SEED = 20261205
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _chars(alphabet: str, n: int) -> Callable[[random.Random], str]:
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(n))


def _jwt(rng: random.Random) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    claims = {"sub": _chars(string.digits, 8)(rng), "exp": rng.randrange(1_700_000_000, 1_900_000_000)}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{_chars(_URLSAFE, 43)(rng)}"


def _pem(rng: random.Random) -> str:
    body = "\n".join(_chars(_B64, 70)(rng) for _ in range(6))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"


def _symbols(n: int) -> Callable[[random.Random], str]:
    pool = _ALNUM + "!#%^*-_+?"

    def make(rng: random.Random) -> str:  # at least one of each class, as password rules ask
        core = [rng.choice(string.ascii_lowercase), rng.choice(string.ascii_uppercase), rng.choice(string.digits)]
        rest = [rng.choice(pool) for _ in range(n - 4)]
        chars = [*core, rng.choice("!#%^*-_+?"), *rest]
        rng.shuffle(chars)
        return "".join(chars)

    return make


_SHAPES: dict[str, Callable[[random.Random], str]] = {
    "aws_key": lambda rng: "AKIA" + _chars(string.ascii_uppercase + string.digits, 16)(rng),
    "aws_secret": _chars(_B64, 40),
    "ghp": lambda rng: "ghp_" + _chars(_ALNUM, 36)(rng),
    "github_pat": lambda rng: "github_pat_" + _chars(_ALNUM, 22)(rng) + "_" + _chars(_ALNUM, 59)(rng),
    "glpat": lambda rng: "glpat-" + _chars(_URLSAFE, 20)(rng),
    "xoxb": lambda rng: (
        f"xoxb-{_chars(string.digits, 12)(rng)}-{_chars(string.digits, 13)(rng)}-"
        + _chars(string.ascii_lowercase + string.digits, 24)(rng)
    ),
    "slack_hook": lambda rng: (
        "https://hooks.slack.com/services/T"
        + _chars(string.ascii_uppercase, 8)(rng)
        + "/B"
        + _chars(string.ascii_uppercase, 8)(rng)
        + "/"
        + _chars(_ALNUM, 24)(rng)
    ),
    "stripe": lambda rng: "sk_live_" + _chars(_ALNUM, 24)(rng),
    "openai": lambda rng: "sk-proj-" + _chars(_URLSAFE, 48)(rng),
    "anthropic": lambda rng: "sk-ant-api03-" + _chars(_URLSAFE, 93)(rng) + "AA",
    "google": lambda rng: "AIza" + _chars(_URLSAFE, 35)(rng),
    "hf": lambda rng: "hf_" + _chars(_ALNUM, 34)(rng),
    "sendgrid": lambda rng: "SG." + _chars(_URLSAFE, 22)(rng) + "." + _chars(_URLSAFE, 43)(rng),
    "twilio": lambda rng: "SK" + _chars(string.hexdigits.lower()[:16], 32)(rng),
    "npm": lambda rng: "npm_" + _chars(_ALNUM, 36)(rng),
    "pypi": lambda rng: "pypi-AgEIcHlwaS5vcmc" + _chars(_URLSAFE, 80)(rng),
    "jwt": _jwt,
    "pem": _pem,
    "azure": lambda rng: _chars(_B64, 86)(rng) + "==",
    "telegram": lambda rng: _chars(string.digits, 10)(rng) + ":AA" + _chars(_URLSAFE, 33)(rng),
    "word_rand": _chars(_ALNUM, 18),
    "symbol_rand": _symbols(20),
    "symbol_short": _symbols(12),
    "alnum32": _chars(_ALNUM, 32),
    "alnum40": _chars(_ALNUM, 40),
    "hex32": _chars("0123456789abcdef", 32),
    # Look-alikes.
    "uuid": lambda rng: "-".join(_chars("0123456789abcdef", n)(rng) for n in (8, 4, 4, 4, 12)),
    "sha1": _chars("0123456789abcdef", 40),
    "sha256": _chars("0123456789abcdef", 64),
    "md5": _chars("0123456789abcdef", 32),
    "b64_long": _chars(_B64, 600),
    "b64_43": _chars(_B64, 43),
}


_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_HEX = "0123456789abcdef"
_SHAPES |= {
    "shopify": lambda rng: "shpat_" + _chars(_HEX, 32)(rng),
    "do_token": lambda rng: "dop_v1_" + _chars(_HEX, 64)(rng),
    "vault": lambda rng: "hvs." + _chars(_URLSAFE, 90)(rng),
    "doppler": lambda rng: "dp.st.prd." + _chars(_ALNUM, 43)(rng),
    "postman": lambda rng: "PMAK-" + _chars(_HEX, 24)(rng) + "-" + _chars(_HEX, 34)(rng),
    "linear": lambda rng: "lin_api_" + _chars(_ALNUM, 40)(rng),
    "databricks": lambda rng: "dapi" + _chars(_HEX, 32)(rng),
    "grafana": lambda rng: "glsa_" + _chars(_ALNUM, 32)(rng) + "_" + _chars(_HEX, 8)(rng),
    "newrelic": lambda rng: "NRAK-" + _chars(string.ascii_uppercase + string.digits, 27)(rng),
    "sentry": lambda rng: "sntrys_" + _chars(_B64, 60)(rng),
    "age": lambda rng: "AGE-SECRET-KEY-1" + _chars(_BECH32.upper(), 58)(rng),
    "slack_app": lambda rng: (
        f"xapp-1-A{_chars(string.ascii_uppercase + string.digits, 10)(rng)}-{_chars(string.digits, 13)(rng)}-"
        + _chars(_HEX, 64)(rng)
    ),
    "stripe_test": lambda rng: "sk_test_" + _chars(_ALNUM, 99)(rng),
    "glrt": lambda rng: "glrt-" + _chars(_URLSAFE, 20)(rng),
    "ghs": lambda rng: "ghs_" + _chars(_ALNUM, 36)(rng),
    "square_atp": lambda rng: "EAAA" + _chars(_URLSAFE, 60)(rng),
    "alibaba": lambda rng: "LTAI" + _chars(_ALNUM, 20)(rng),
    "supabase": lambda rng: "sbp_" + _chars(_HEX, 40)(rng),
    "mailchimp": lambda rng: _chars(_HEX, 32)(rng) + "-us" + str(rng.randrange(1, 21)),
    "aws_env": lambda rng: (
        "AWS_ACCESS_KEY_ID=AKIA"
        + _chars(string.ascii_uppercase + string.digits, 16)(rng)
        + "\nAWS_SECRET_ACCESS_KEY="
        + _chars(_B64, 40)(rng)
        + "\n"
    ),
    "db_line": lambda rng: "DB_PASSWORD=" + _symbols(20)(rng),
    "basic_url": lambda rng: "https://deploy:" + _chars(_ALNUM, 18)(rng) + "@registry.internal/v2/",
    # Look-alikes of the evasions.
    "word_password": lambda rng: "password",
    "plain_config": lambda rng: "LOG_LEVEL=info\nWORKERS=" + str(rng.randrange(2, 64)) + "\n",
    "plain_json": lambda rng: json.dumps({"page": rng.randrange(1, 500), "sort": "created_at", "order": "desc"}),
    "gpg_fp": lambda rng: " ".join(_chars("0123456789ABCDEF", 4)(rng) for _ in range(10)),
    "grouped_code": lambda rng: "-".join(_chars(string.ascii_uppercase + string.digits, 5)(rng) for _ in range(5)),
}

_FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in string.ascii_letters + string.digits + "_-"}
_MATH_BOLD = {
    **{c: chr(0x1D400 + i) for i, c in enumerate(string.ascii_uppercase)},
    **{c: chr(0x1D41A + i) for i, c in enumerate(string.ascii_lowercase)},
    **{c: chr(0x1D7CE + i) for i, c in enumerate(string.digits)},
}


def _grouped(value: str, width: int, separator: str) -> str:
    return separator.join(value[i : i + width] for i in range(0, len(value), width))


# How a value may be written to slip past a scanner: the evasions of a dev set (`{shape|evasion}`).
_EVASIONS: dict[str, Callable[[str], str]] = {
    "fullwidth": lambda v: "".join(_FULLWIDTH.get(c, c) for c in v),
    "fwdigits": lambda v: "".join(_FULLWIDTH[c] if c.isdigit() else c for c in v),
    "math": lambda v: "".join(_MATH_BOLD.get(c, c) for c in v),
    "spaced1": lambda v: " ".join(v),
    "spaced4": lambda v: _grouped(v, 4, " "),
    "nbsp4": lambda v: _grouped(v, 4, "\u00a0"),
    "zw": lambda v: "\u200b".join(v),
    "zwj": lambda v: "\u200d".join(v),
    "wrap": lambda v: _grouped(v, 20, "\n"),
    "prefix_apart": lambda v: v[:4] + " " + v[4:],
    "fw_spaced": lambda v: " ".join(_FULLWIDTH.get(c, c) for c in v),
    "b64": lambda v: base64.b64encode(v.encode()).decode(),
    "b64url": lambda v: base64.urlsafe_b64encode(v.encode()).decode().rstrip("="),
}
_PLACE = re.compile(r"\{\{|\}\}|\{(\w+)(?:\|(\w+))?\}")


def fill(template: str, rng: random.Random) -> str:
    """``template`` with each ``{shape}`` replaced by a fresh value of that shape, and each
    ``{shape|evasion}`` by one written that way (``{aws_key|spaced4}``); ``{{`` and ``}}`` are braces."""

    def value(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group()[0]
        made = _SHAPES[match.group(1)](rng)
        return _EVASIONS[match.group(2)](made) if match.group(2) else made

    return _PLACE.sub(value, template)


# Text crafted against regular expressions: runs that a backtracking engine splits in many ways
# (spaces after a keyword: 95 s for 3 KB through detect-secrets' IBM pattern), repeated prefixes.
_CRAFTED = {
    "pwd + spaces": ("Rotated the db pwd", " ", "yesterday."),
    "pwd = + spaces": ("pwd = ", " ", ""),
    "eyJ repeated": ("", "eyJ", ""),
    "sk- repeated": ("", "sk-", ""),
    "://a repeated": ("", "://a", ""),
    "token= repeated": ("", "token=", ""),
    "AKIA repeated": ("", "AKIA", ""),
    "spaced letters": ("", "A ", ""),
    "base64 of text": ("", "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ= ", ""),
    "fullwidth": ("", "ＡＫＩＡ１ ", ""),
}


def _crafted_ms(chars: int) -> dict[str, float]:
    """Milliseconds to scan ``chars`` characters of each crafted text."""
    timed = {}
    for name, (head, unit, tail) in _CRAFTED.items():
        text = head + unit * ((chars - len(head) - len(tail)) // len(unit)) + tail
        began = time.perf_counter()
        find_secrets(text)
        timed[name] = round((time.perf_counter() - began) * 1000, 1)
    return timed


def _prose(prose: Path | None) -> dict[str, Any] | None:
    """The scan over a real text that holds no credential: its time per MB, and what it flagged
    (each one a false alarm, unless the text quotes an example key)."""
    if prose is None:
        return None
    text = prose.read_text(encoding="utf-8", errors="replace")
    began = time.perf_counter()
    found = find_secrets(text)
    seconds = time.perf_counter() - began
    return {
        "file": prose.name,
        "mb": round(len(text.encode()) / 1e6, 2),
        "ms_per_mb": round(seconds * 1000 / (len(text.encode()) / 1e6), 1),
        "flagged": [f"{f.kind}: {text[max(0, f.start - 30) : f.start]!r}" for f in found],
    }


def run_secrets_bench(data: Path, *, prose: Path | None = None) -> dict[str, Any]:
    """Score the detector on the cases of ``data``; time it on ``prose`` (a real text) and crafted text."""
    return {
        "bench": "secrets",
        **score_cases(data),
        "prose": _prose(prose),
        "crafted_10k_chars_ms": _crafted_ms(10_000),
        "crafted_1mb_ms": _crafted_ms(1_000_000),
    }


def score_cases(data: Path) -> dict[str, Any]:
    """Precision and recall of the detector on the cases of ``data``, with every miss and false alarm."""
    rng = random.Random(_SEED)
    with data.open(encoding="utf-8") as lines, reading(data, "secret cases (JSON lines: text, secret, kind)"):
        cases = [(fill(str(c["text"]), rng), bool(c["secret"]), str(c["kind"])) for c in json_lines(lines)]
    caught = missed = false_alarms = passed = 0
    misses: list[str] = []
    alarms: list[str] = []
    for text, is_secret, kind in cases:
        found = find_secrets(text)
        if is_secret and found:
            caught += 1
        elif is_secret:
            missed += 1
            misses.append(kind)
        elif found:
            false_alarms += 1
            alarms.append(f"{kind} (as {found[0].kind})")
        else:
            passed += 1
    return {
        "cases": len(cases),
        "secrets": caught + missed,
        "look_alikes": false_alarms + passed,
        "recall": round(caught / max(1, caught + missed), 4),
        "precision": round(caught / max(1, caught + false_alarms), 4),
        "missed": misses,
        "false_alarms": alarms,
    }

"""The credential shapes the secret scan looks for, each as an RE2 pattern.

RE2 (``google-re2``) matches in time linear in the text, whatever the pattern: a backtracking
engine took 95 s on one 3 KB write whose spaces an ``(?: *)(?: +)`` pattern could split in cubic
many ways. RE2 has no look-around, so a "no token character before it" is written as
``(?:^|[^…])`` and an edge after it as ``(?:[^…]|$)``; each pattern then names the credential's
own part as its ``value`` group, and that group's span is the finding's (the whole match where a
pattern has none).

The provider shapes are those of Yelp's ``detect-secrets`` (1.5, its ``plugins/*.py``) rewritten for
RE2, and those it does not know (Anthropic, newer OpenAI keys, Google, Hugging Face, GitHub
fine-grained, Shopify, DigitalOcean, …) as the providers document their prefixes. The kinds keep
``detect-secrets``' names, so an audit record written before this module reads the same.
"""

from __future__ import annotations

__all__ = ["PREFIXED_KINDS", "PROVIDER_SHAPES"]

# A key, password or token a config line assigns (IBM's and Cloudant's patterns), before its value.
_ASSIGNED = r"""(?:"|'|)(?:\]|) *(?:=|:|:=|=>| +|::) *(?:"|'|)"""
_B64URL = r"[A-Za-z0-9_\-]"

PROVIDER_SHAPES: tuple[tuple[str, str], ...] = (
    ("aws_access_key", r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}"),
    (
        "aws_access_key",
        r"""(?i)aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['"](?P<value>[0-9a-zA-Z/+]{40})['"]""",
    ),
    ("artifactory_credentials", r"""(?:\s|=|:|"|^)(?P<value>AKC[a-zA-Z0-9]{10,})(?:\s|"|$)"""),
    ("artifactory_credentials", r"""(?:\s|=|:|"|^)(?P<value>AP[\dABCDEF][a-zA-Z0-9]{8,})(?:\s|"|$)"""),
    ("azure_storage_account_access_key", r"AccountKey=(?P<value>[a-zA-Z0-9+/=]{88})"),
    ("basic_auth_credentials", r"""://[^:/?#\[\]@!$&'()*+,;=\s]+:(?P<value>[^:/?#\[\]@!$&'()*+,;=\s]+)@"""),
    (
        "cloudant_credentials",
        r"""(?i)(?:^|\W)(?:\[|)(?:"|'|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)"""
        + _ASSIGNED
        + r"(?P<value>[0-9a-f]{64}|[a-z]{24})(?:\W|$)",
    ),
    ("cloudant_credentials", r"(?i)https?://[\w\-]+:(?P<value>[0-9a-f]{64}|[a-z]{24})@[\w\-]+\.cloudant\.com"),
    ("discord_bot_token", r"[MNO][a-zA-Z\d_\-]{23,25}\.[a-zA-Z\d_\-]{6}\.[a-zA-Z\d_\-]{27}"),
    ("github_token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}"),
    ("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    (
        "gitlab_token",
        r"(?P<value>(?:glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}|GR1348941[A-Za-z0-9_\-]{20,50}"
        r"|glcbt-(?:[0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}|glimt-[A-Za-z0-9_\-]{25}|glptt-[A-Za-z0-9_\-]{40}"
        r"|glagent-[A-Za-z0-9_\-]{50,1000}|gloas-[A-Za-z0-9_\-]{64})(?:[^A-Za-z0-9_]|$)",
    ),
    (
        "ibm_cos_hmac_credentials",
        r"""(?i)(?:^|\W)(?:\[|)(?:"|'|)(?:(?:ibm)?[\-_]?cos[\-_]?(?:hmac)?|)(?:_|-|)(?:secret[\-_]?(?:access)?[\-_]?key)"""
        + _ASSIGNED
        + r"(?P<value>[a-f0-9]{48})(?:[^a-f0-9]|$)",
    ),
    (
        "ibm_cloud_iam_key",
        r"""(?i)(?:^|\W)(?:\[|)(?:"|'|)(?:ibm(?:_|-|)cloud(?:_|-|)iam|cloud(?:_|-|)iam|ibm(?:_|-|)cloud|ibm(?:_|-|)iam"""
        r"|ibm|iam|cloud|)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)"
        + _ASSIGNED
        + r"(?P<value>[a-zA-Z0-9_\-]{44})(?:[^a-zA-Z0-9_\-]|$)",
    ),
    # Two dots: one segment of base64 JSON (a flag payload, a cursor) is no token.
    (
        "json_web_token",
        r"(?:^|[^A-Za-z0-9_=\-])(?P<value>eyJ[A-Za-z0-9_=\-]+\.[A-Za-z0-9_=\-]+\.[A-Za-z0-9_=+/\-]*)",
    ),
    ("mailchimp_access_key", r"[0-9a-z]{32}-us[0-9]{1,2}"),
    (
        "npm_tokens",
        r"(?:^|[^/])//[^\s]+/:_authToken=\s*(?P<value>npm_[A-Za-z0-9]{20,}|[A-Fa-f0-9\-]{36})",
    ),
    ("npm_tokens", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("openai_token", r"(?:^|[^A-Za-z0-9_\-])(?P<value>sk-[A-Za-z0-9_\-]*?[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})"),
    (
        "private_key",
        r"BEGIN (?:DSA |EC |OPENSSH |RSA |SSH2 ENCRYPTED |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?"
        r"|PuTTY-User-Key-File-[23]",
    ),
    ("pypi_token", r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{70,}"),
    ("sendgrid_api_key", r"SG\.[a-zA-Z0-9_\-]{22}\.[a-zA-Z0-9_\-]{43}"),
    ("slack_token", r"(?i)xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+"),
    ("slack_token", r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{32,}"),
    ("slack_token", r"(?i)https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+"),
    (
        "softlayer_credentials",
        r"""(?i)(?:^|\W)(?:\[|)(?:"|'|)(?:softlayer|sl)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)"""
        + _ASSIGNED
        + r"(?P<value>[a-z0-9]{64})",
    ),
    ("softlayer_credentials", r"(?i)https?://api\.softlayer\.com/soap/(?:v3|v3\.1)/(?P<value>[a-z0-9]{64})"),
    ("square_oauth_secret", r"sq0(?:csp|atp)-[0-9A-Za-z\\\-_]{22,43}|\bEAAA[A-Za-z0-9_\-]{60}"),
    ("stripe_access_key", r"(?:r|s)k_(?:live|test)_[0-9a-zA-Z]{24,99}"),
    ("telegram_bot_token", r"\d{8,10}:[0-9A-Za-z_\-]{35}"),
    ("twilio_api_key", r"(?:AC|SK)[a-z0-9]{32}"),
    # Shapes detect-secrets does not know.
    ("anthropic_key", r"\bsk-ant-[a-z]{2,10}\d{0,3}-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|\bsk-[A-Za-z0-9]{40,}\b"),
    ("google_api_key", r"\b(?P<value>AIza" + _B64URL + r"{35})(?:[^A-Za-z0-9_\-]|$)"),
    ("google_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    ("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    ("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    ("hashicorp_vault_token", r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}"),
    ("terraform_cloud_token", r"\b[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}"),
    ("doppler_token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b"),
    ("postman_api_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("linear_api_key", r"\blin_api_[A-Za-z0-9]{40}\b"),
    ("atlassian_api_token", r"\bATATT3[A-Za-z0-9_\-=]{180,}"),
    ("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("grafana_token", r"\bgl(?:c|sa)_[A-Za-z0-9_+/=]{32,}"),
    ("new_relic_key", r"\bNR(?:AK|II|JS)-[A-Za-z0-9]{27}\b"),
    ("sentry_token", r"\bsntry[su]_[A-Za-z0-9_+/=]{40,}"),
    ("age_secret_key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"),
    ("alibaba_access_key", r"\bLTAI[A-Za-z0-9]{12,20}\b"),
    ("supabase_token", r"\bsbp_[a-f0-9]{40}\b"),
    ("connection_string_password", r"(?i)(?:^|[^a-z])(?:password|pwd)\s*=\s*(?P<value>[^;\s'\"]{4,200})"),
    ("url_password", r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:/@]{0,100}:(?P<value>[^\s:/@]{3,200})@"),
)
"""Every (kind, pattern) the scan runs over a text; a kind may have several patterns."""

PREFIXED_KINDS = frozenset(
    {
        "aws_access_key",
        "github_token",
        "gitlab_token",
        "slack_token",
        "stripe_access_key",
        "openai_key",
        "anthropic_key",
        "google_api_key",
        "huggingface_token",
        "sendgrid_api_key",
        "pypi_token",
        "npm_tokens",
        "shopify_token",
        "digitalocean_token",
        "hashicorp_vault_token",
        "doppler_token",
        "postman_api_key",
        "linear_api_key",
        "databricks_token",
        "grafana_token",
        "new_relic_key",
        "sentry_token",
        "age_secret_key",
        "square_oauth_secret",
    }
)
"""Kinds whose patterns start with a provider's own literal prefix (``AKIA``, ``ghp_``, ``sk-ant-``):
specific enough to look for in a text with its spaces taken out, where a pattern of bare
characters would find words run together."""

"""Redaction: secrets taken out of every text pegboard shows or keeps, the
audit log's input previews, the lines it prints on stderr, the errors that
quote an input or a URL, and the config it shows.

``redact(text)`` replaces tokens, keys, passwords and credentials with
``***``; ``redact_url(url)`` hides the password of a URL (in its authority,
plain or %-encoded, and in a ``password=`` query parameter).
"""

from __future__ import annotations

import re

__all__ = ["hide_secrets", "redact", "redact_url"]

# --- redaction -------------------------------------------------------------------
#
# The patterns are the project's own, kept here as one table. Yelp's detect-secrets
# (1.5.0, May 2024; its fork bc-detect-secrets 1.5.52 installs the same module name)
# was tried first: importing any of its plugin classes imports the package's whole
# scanner, requests and PyYAML, about 0.5 s on this machine in the process whose calls
# are recorded, and its set lacks Anthropic's sk-ant-, OpenAI's sk-proj-, Google's AIza,
# GitHub's github_pat_, and everything argument-shaped (curl -u, mysql -p, sudo -S).
# Microsoft's secret masker (microsoft-security-utilities-secret-masker 1.0.0b4) masks
# text but is a beta whose set is Azure's keys, without AWS, GitHub, Slack or Stripe.
# So: the providers' published prefixes below, generic keyword and URL rules, a long
# opaque run as the catch-all, and a small table of command shapes.

_SECRET_WORDS = r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth|" \
                r"credentials?|private[_-]?key|session[_-]?key|cookie)"
# One shell word: quoted, or up to a space, quote or shell operator.
_WORD = r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s'";&|]+)"""
# Where a program's name starts: not inside a word (``/usr/bin/`` before it is fine).
_PROGRAM = r"(?<![\w.-])"
# The rest of one simple command (no pipe, list or newline in between).
_SAME_COMMAND = r"[^\n;&|]*?"

# Command shapes whose argument is a secret: (programs, the option before it, the secret).
_COMMAND_SECRETS: tuple[tuple[str, str, str], ...] = (
    ("curl|wget", r"\s(?:-u\s*|--user[\s=]+)['\"]?[^\s:'\"]*:", r"[^\s'\"]+"),  # -u user:PW (the user kept)
    ("mysql|mysqldump|mysqladmin|mariadb|mariadb-dump", r"\s-p", r"[^\s'\"]+"),  # -pPW; "-p PW" prompts
    ("sshpass", r"\s-p\s*", _WORD),
    ("redis-cli", r"\s-a\s*", _WORD),
    ("smbclient|rpcclient", r"\s(?:-U\s*|--user[\s=]+)['\"]?[^\s%'\"]*%", r"[^\s'\"]+"),  # -U user%PW
    ("docker|podman|nerdctl|helm", r"\slogin\b" + _SAME_COMMAND + r"\s-p\s*", _WORD),
)
_REDACTIONS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
                r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S), "[private key]"),
    # scheme://user:password@host, to the last @ before the path: a password may hold an @ itself
    (re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'\"]*):[^\s/?#'\"]*@"), r"\1:***@"),
    # Authorization: Bearer xyz, -H 'Authorization: token xyz'
    (re.compile(r"(?i)(authorization\s*[:=]\s*(?:bearer|basic|token|digest)?\s*)[^\s'\"]+"), r"\1***"),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1***"),
    # KEY=value, key: value, "key": "value", ?token=value (the name holds a secret word)
    (re.compile(r"(?i)((?:^|(?<=[\s;&|?,{(\"']))[\"']?[A-Za-z0-9_.-]*" + _SECRET_WORDS
                + r"[A-Za-z0-9_.-]*[\"']?\s*[=:]\s*)([\"']?)[^\s\"'&;,}]+"), r"\1\2***"),
    # --password value, -token value, --pass value
    (re.compile(r"(?i)(\s--?[A-Za-z0-9_-]*" + _SECRET_WORDS + r"[A-Za-z0-9_-]*\s+)([\"']?)[^\s\"']+"),
     r"\1\2***"),
    # echo PW | sudo -S, printf '%s\n' PW | passwd --stdin, echo user:PW | chpasswd, sudo -S <<< PW
    (re.compile(r"(\b(?:echo|printf)\s+)([^|\n;&]+?)(\s*\|\s*(?:[\w.-]*/)*(?:sudo\s" + _SAME_COMMAND
                + r"-[A-Za-z]*S\b|passwd\s" + _SAME_COMMAND + r"--stdin\b|chpasswd\b))"), r"\1***\3"),
    (re.compile(r"(\bsudo\s" + _SAME_COMMAND + r"-[A-Za-z]*S\b" + _SAME_COMMAND + r"<<<\s*)" + _WORD),
     r"\1***"),
    # the providers' published key shapes
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|"
                r"sk-[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[0-9A-Za-z]{8,}|xox[abeposr]-[A-Za-z0-9-]{10,}|"
                r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|"
                r"npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{50,}|hf_[A-Za-z0-9]{30,}|"
                r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|"
                r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"), "***"),
    (re.compile(r"(hooks\.slack\.com/services/)[A-Za-z0-9_/]+"), r"\1***"),
    # any other long opaque run of letters and digits (keys, hashes, tokens); not a run with a
    # slash beside it or inside it, which is a path the operator needs to read
    (re.compile(r"(?<![A-Za-z0-9+/_=.-])(?=[A-Za-z0-9+_=-]*\d)(?=[A-Za-z0-9+_=-]*[A-Za-z])"
                r"[A-Za-z0-9+_=-]{32,}(?![A-Za-z0-9+/_=.-])"), "***"),
]


# The command shapes, each tried only on text that names one of its programs.
_COMMAND_REDACTIONS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (tuple(programs.split("|")),
     re.compile(rf"({_PROGRAM}(?:{programs})(?![\w.-]){_SAME_COMMAND}{option}){secret}"))
    for programs, option, secret in _COMMAND_SECRETS
]


# Everything a redaction above can match contains a long run or one of these
# (lower-cased): text without any (most paths and short values) skips the passes.
# Substring tests, not one case-blind regex, which costs four times as much.
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_=-]{16,}")
_MARKERS = ("://", "-----begin", "bearer", "auth", "pass", "pwd", "secret", "token", "key", "credential", "cookie",
            "sudo", "curl", "wget", "mysql", "maria", "sshpass", "redis-cli", "smbclient", "rpcclient", "login",
            "k_", "xox", "eyj")


def _maybe_secret(text: str) -> bool:
    lower = text.lower()
    return any(marker in lower for marker in _MARKERS) or _LONG_RUN.search(text) is not None


def redact(text: str) -> str:
    """``text`` with tokens, keys, passwords and credentials replaced by ``***``."""
    if not _maybe_secret(text):
        return text
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    for programs, pattern in _COMMAND_REDACTIONS:
        if any(program in text for program in programs):
            text = pattern.sub(r"\1***", text)
    return text


# The authority's password runs to the last @ before the path: a password may hold an @.
_PASSWORD_IN_URL = re.compile(r"(://[^:/@\s]*:)[^\s/?#]*@")
_PASSWORD_IN_QUERY = re.compile(r"((?:^|[?&])password=)[^&\s]*", re.I)


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (in the authority and
    in a ``password=`` query parameter), for everything that is printed."""
    return _PASSWORD_IN_QUERY.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1***@", url))


_SECRET_NAME = re.compile(r"(?i)[A-Za-z0-9_.-]*" + _SECRET_WORDS + r"[A-Za-z0-9_.-]*")


def hide_secrets(value: object, key: str = "") -> object:
    """A config value as it may be shown: a string under a key that names a
    secret (``password``, ``token``, ``Authorization``, ``GITHUB_TOKEN``) as
    ``***``, every other string with its URLs' passwords hidden, lists and
    tables value by value."""
    if isinstance(value, str):
        return "***" if value and _SECRET_NAME.fullmatch(key) else redact_url(value)
    if isinstance(value, dict):
        return {k: hide_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [hide_secrets(v, key) for v in value]
    return value

"""Which way Brim's requests to an engine go: straight to it, or through the user's proxy.

httpx (and the official Ollama client built on it) trusts `HTTP_PROXY`, `HTTPS_PROXY` and
`ALL_PROXY` by default, and few people list `localhost` in `NO_PROXY`. A desktop with a
corporate proxy configured would then send every prompt for the engine on this very machine
(whole conversations, files the agent read) to the proxy, and break the promise that a local
model keeps everything local. So Brim decides the route itself, once per engine URL:

- an engine on this machine is always reached directly, whatever the environment says.
  That is decided by the address the host stands for, not by its spelling: 127.0.0.0/8,
  ::1, 0.0.0.0 and :: (Ollama's own docs use 0.0.0.0), written in any form the system
  accepts (`127.1`, `2130706433`, `::ffff:127.0.0.1`, `localhost.`), or a name that
  resolves to those only;
- any other host follows the environment the way curl and Python do: the scheme's proxy
  variable (lower case first), else `ALL_PROXY`, unless `NO_PROXY` names the host (on macOS
  and Windows the system's proxy settings count too, as for every Python program).

Every engine client is built with the route's keyword arguments, and `brim probe` prints
the route (without the proxy's credentials).

An engine's answer never changes the route either: a redirect (an Ollama that answers
`/api/chat` with 307 to another port) would have the client send the whole conversation
again wherever the Location points. The official Ollama client follows redirects, and
httpx's may, so every engine client is built not to, and its first response hook refuses
one with an error that names both URLs.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
import threading
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from engine.providers.classify import safe_url
from engine.providers.wire import WireError

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
# How long a host name may take to resolve before its route is decided without it (then it
# follows the proxy variables, as any host that is not this machine).
RESOLVE_TIMEOUT_S = 1.0
# The characters of an IPv4 address in the forms inet_aton reads (decimal, octal, hex parts).
_IPV4_NUMBERS = re.compile(r"[0-9a-fx.]+")


def _bypassed_by(no_proxy: str, host: str) -> bool:
    """Whether the no_proxy list skips the proxy for `host` (host or host:port), by Python's
    own matcher: in urllib.request since 3.0 but undocumented, so typeshed leaves it out."""
    matches = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return bool(matches(host, {"no": no_proxy}))


@dataclass(frozen=True)
class Route:
    """How requests to one engine URL travel. `proxy` holds the proxy's URL as the user
    gave it (credentials included, for httpx only); `describe()` is what may be shown."""

    proxy: str | None
    reason: str  # "loopback", "no_proxy", "no proxy configured", "environment"
    source: str = ""  # the variable the proxy (or the bypass) came from

    @property
    def direct(self) -> bool:
        return self.proxy is None

    def describe(self) -> str:
        if self.proxy is not None:
            origin = f" (from {self.source})" if self.source else ""
            return f"via proxy {safe_url(self.proxy)}{origin}"
        if self.reason == "loopback":
            return "direct (a loopback address is never sent through a proxy)"
        if self.reason == "no_proxy":
            return f"direct (the host is listed in {self.source or 'NO_PROXY'})"
        return "direct (no proxy configured)"

    def to_json(self) -> dict[str, Any]:
        shown = safe_url(self.proxy) if self.proxy is not None else None
        return {"direct": self.direct, "proxy": shown, "reason": self.reason, "from": self.source}

    def client_kwargs(self) -> dict[str, Any]:
        """What an `httpx.AsyncClient` (or `ollama.AsyncClient`) is built with.

        A proxy is passed explicitly (httpx then ignores the proxy variables). A direct
        route past configured proxies turns httpx's environment reading off, since it would
        build a transport for every proxy variable (and fail on a SOCKS one without
        `socksio`) even when none is used; the CA settings it would have read
        (`SSL_CERT_FILE`, `SSL_CERT_DIR`) are passed on by hand."""
        if self.proxy is not None:
            return {"proxy": self.proxy}
        if self.reason == "no proxy configured":
            return {}
        return {"trust_env": False, "verify": _verify_from_environment()}


def _verify_from_environment() -> ssl.SSLContext | bool:
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        return True
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, ssl.SSLError):
        return True  # a broken setting fails no differently than httpx itself would


def _reaches_this_machine(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Loopback, or the unspecified address (a connection to 0.0.0.0 or :: reaches this
    machine), also written as an IPv4-mapped IPv6 address."""
    mapped = getattr(address, "ipv4_mapped", None)
    return any(a.is_loopback or a.is_unspecified for a in (address, mapped) if a is not None)


def _numeric(name: str) -> list[str] | None:
    """The address a numeric host stands for, read as the system reads it when it connects
    (`127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1` the way inet_aton reads them, which
    getaddrinfo does for them; IPv6 in any of its forms), or None for a name. Never asks a
    resolver: that is no lookup at all."""
    try:
        return [str(ipaddress.ip_address(name))]
    except ValueError:
        pass
    if not _IPV4_NUMBERS.fullmatch(name):
        return None
    try:
        return [socket.inet_ntoa(socket.inet_aton(name))]
    except OSError:
        return None


def _resolved(name: str, timeout_s: float) -> list[str]:
    """The addresses a host name resolves to (the hosts file first, as for a connection),
    or none when it does not resolve within `timeout_s`: the lookup runs on a daemon thread
    that a hung resolver cannot keep alive past Brim."""
    found: list[str] = []
    done = threading.Event()

    def look_up() -> None:
        try:
            found.extend(str(i[4][0]) for i in socket.getaddrinfo(name, None))
        except (OSError, UnicodeError, ValueError):
            pass
        finally:
            done.set()

    threading.Thread(target=look_up, name="brim-resolve", daemon=True).start()
    return list(found) if done.wait(timeout_s) else []


def is_loopback(host: str, *, resolve_timeout_s: float = RESOLVE_TIMEOUT_S) -> bool:
    """Whether `host` reaches this machine, decided by what it resolves to, not by how it
    is spelled: 127.0.0.0/8, ::1, 0.0.0.0, :: (and their IPv4-mapped and numeric forms),
    the names that always mean this machine, and a name whose addresses are all among
    those (a hosts-file alias)."""
    name = host.strip("[]").split("%", 1)[0].rstrip(".").lower()
    if not name:
        return False
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    addresses = _numeric(name)
    if addresses is None:
        addresses = _resolved(name, resolve_timeout_s) if resolve_timeout_s > 0 else []
    parsed = []
    for text in addresses:
        try:
            parsed.append(ipaddress.ip_address(text.split("%", 1)[0]))
        except ValueError:
            return False
    return bool(parsed) and all(_reaches_this_machine(a) for a in parsed)


def _variable(name: str) -> tuple[str, str] | None:
    """The value of `name` (lower case wins, as in curl and Python) and which spelling."""
    for key in (name.lower(), name.upper()):
        value = os.environ.get(key, "").strip()
        if value:
            return key, value
    return None


def engine_route(url: str) -> Route:
    """The route requests to the engine at `url` take."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return Route(None, "loopback")  # an unusable URL fails later, and never via a proxy
    if not host or is_loopback(host, resolve_timeout_s=0):
        return Route(None, "loopback")
    scheme = parts.scheme or "http"
    from_env = _variable(f"{scheme}_proxy") or _variable("all_proxy")
    proxies = urllib.request.getproxies()  # the environment, else the system's settings
    proxy = from_env[1] if from_env else proxies.get(scheme) or proxies.get("all")
    if not proxy:
        return Route(None, "no proxy configured")
    no_proxy = _variable("no_proxy")
    target = f"{host}:{port}" if port else host
    if no_proxy and _bypassed_by(no_proxy[1], target):
        return Route(None, "no_proxy", no_proxy[0])
    if not from_env and urllib.request.proxy_bypass(host):
        return Route(None, "no_proxy", "the system's proxy exceptions")
    if is_loopback(host):  # a name that resolves to this machine (asked only now, when
        return Route(None, "loopback")  # the answer decides whether a proxy is used)
    if "://" not in proxy:
        proxy = f"http://{proxy}"
    return Route(proxy, "environment", from_env[0] if from_env else "system proxy settings")


class RedirectRefused(WireError):
    """The engine answered with a redirect; nothing was sent where it points."""


async def refuse_redirect(response: httpx.Response) -> None:
    """An httpx `response` event hook: a redirect from an engine is an error (it runs
    before the client would follow one)."""
    if not response.is_redirect:
        return
    source = str(response.request.url)
    try:
        target = str(response.request.url.join(response.headers.get("location", "")))
    except (httpx.InvalidURL, ValueError):
        target = "an address Brim cannot read"
    else:
        target = safe_url(target)
    raise RedirectRefused(
        f"a redirect (HTTP {response.status_code}) from {safe_url(source)} to {target}, "
        "which Brim does not follow: nothing was sent there. Point the agent's base_url at "
        "the engine itself"
    )


def no_redirects(kw: dict[str, Any]) -> dict[str, Any]:
    """An engine client's keyword arguments made to refuse redirects: not followed, and
    `refuse_redirect` first among its response hooks."""
    hooks = dict(kw.get("event_hooks") or {})
    hooks["response"] = [refuse_redirect, *hooks.get("response", ())]
    return {**kw, "event_hooks": hooks, "follow_redirects": False}

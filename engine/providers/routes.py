"""Which way Brim's requests to an engine go: straight to it, or through the user's proxy.

httpx (and the official Ollama client built on it) trusts `HTTP_PROXY`, `HTTPS_PROXY` and
`ALL_PROXY` by default, and few people list `localhost` in `NO_PROXY`. A desktop with a
corporate proxy configured would then send every prompt for the engine on this very machine
(whole conversations, files the agent read) to the proxy, and break the promise that a local
model keeps everything local. So Brim decides the route itself, once per engine URL:

- a loopback engine (127.0.0.0/8, ::1, localhost) is always reached directly, whatever the
  environment says;
- any other host follows the environment the way curl and Python do: the scheme's proxy
  variable (lower case first), else `ALL_PROXY`, unless `NO_PROXY` names the host (on macOS
  and Windows the system's proxy settings count too, as for every Python program).

Every engine client is built with the route's keyword arguments, and `brim probe` prints
the route (without the proxy's credentials).
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from engine.providers.classify import safe_url

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


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


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (and IPv4-mapped forms), and the names that always mean this
    machine."""
    name = host.strip("[]").rstrip(".").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback)


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
    if not host or is_loopback(host):
        return Route(None, "loopback")
    scheme = parts.scheme or "http"
    from_env = _variable(f"{scheme}_proxy") or _variable("all_proxy")
    proxies = urllib.request.getproxies()  # the environment, else the system's settings
    proxy = from_env[1] if from_env else proxies.get(scheme) or proxies.get("all")
    if not proxy:
        return Route(None, "no proxy configured")
    no_proxy = _variable("no_proxy")
    target = f"{host}:{port}" if port else host
    if no_proxy and urllib.request.proxy_bypass_environment(target, {"no": no_proxy[1]}):
        return Route(None, "no_proxy", no_proxy[0])
    if not from_env and urllib.request.proxy_bypass(host):
        return Route(None, "no_proxy", "the system's proxy exceptions")
    if "://" not in proxy:
        proxy = f"http://{proxy}"
    return Route(proxy, "environment", from_env[0] if from_env else "system proxy settings")

"""What every engine reached over HTTP shares: one connection pool, timeouts, and JSON calls
whose failures are already classified, so each provider module is only its protocol."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from engine.providers.base import Provider
from engine.providers.classify import (
    as_count,
    as_int,
    as_window,
    classify_http,
    classify_transport,
    protocol_error,
    safe_url,
)
from engine.providers.errors import EngineUnreachable, ProtocolError
from engine.providers.routes import engine_route, no_redirects
from engine.providers.wire import WireError, answer_limit, guard_hooks, read_capped

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 600.0  # a big model may think (or load) for minutes before its first token
DEFAULT_CONNECT_TIMEOUT_S = 5.0
PROBE_TIMEOUT_S = 30.0  # listing, reporting and counting answer at once or not at all

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "PROBE_TIMEOUT_S",
    "HttpProvider",
    "as_count",
    "as_int",
    "as_window",
    "bearer_headers",
]


def bearer_headers(api_key: str | None) -> dict[str, str] | None:
    """The header an OpenAI-compatible server's `--api-key` (and a keyed Ollama proxy)
    expects. The key lives only in this header: never in a URL, a log or a message."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else None


class HttpProvider(Provider):
    engine_name: str = ""  # how messages name the engine ("llama-server", "vLLM", ...)

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        api_key: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        num_ctx: int | None = None,
    ) -> None:
        """`num_ctx`: the agent's pin, given once here; each engine applies it in its own
        way (Ollama sends it with every request, llama-server's report compares its slots
        with it, a server that fixes its window at launch leaves it to the accounting)."""
        super().__init__(base_url)
        self.num_ctx = num_ctx
        if "@" in urlsplit(self.base_url).netloc:
            # httpx would turn user:password@ into Basic auth, which vLLM and SGLang ignore
            # and which would carry a password in every request; refused, never shown.
            raise ValueError(
                f"{safe_url(self.base_url)}: a URL with user:password@ is refused (never sent "
                "as Basic auth); give the key as api_key_env or api_key, sent as "
                "Authorization: Bearer"
            )
        self.timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self.probe_timeout = httpx.Timeout(min(timeout, PROBE_TIMEOUT_S), connect=connect_timeout)
        self.has_api_key = bool(api_key)
        self.route = engine_route(self.base_url)
        self._http = self._client(
            httpx.AsyncClient,
            base_url=self.base_url,
            timeout=self.timeout,
            headers=bearer_headers(api_key),
            transport=transport,
            event_hooks=guard_hooks(),  # UTF-8 and bounded lines, checked as bytes arrive
        )

    def _client(self, factory: Callable[..., T], **kw: Any) -> T:
        """An engine client on this engine's route (a loopback engine never via a proxy),
        that follows no redirect (engine/providers/routes.py); a proxy Brim cannot use
        (SOCKS without `socksio`) is one clear error."""
        kw = no_redirects(kw)
        if kw.get("transport") is None:
            kw.pop("transport", None)
            kw.update(self.route.client_kwargs())
        try:
            return factory(**kw)
        except ImportError as exc:
            raise EngineUnreachable(
                f"{self.where} would be reached {self.route.describe()}, which Brim cannot "
                f"use ({exc}); list the host in NO_PROXY to reach it directly"
            ) from None

    @property
    def where(self) -> str:
        """How messages name this engine: its name and its URL without credentials."""
        return f"{self.engine_name} at {safe_url(self.base_url)}"

    def _protocol_error(self, what: str) -> ProtocolError:
        return protocol_error(what, engine=self.engine_name, url=self.base_url)

    async def _request_json(
        self, method: str, path: str, body: Any = None, *, model: str | None = None
    ) -> Any:
        """The JSON answer to `path`, read up to its limit (wire.ANSWER_LIMITS): an answer
        that never ends is a protocol_error at the limit, not a process that fills memory."""
        limit = answer_limit(path)
        try:
            async with self._http.stream(
                method, path, json=body, timeout=self.probe_timeout
            ) as response:
                if response.status_code >= 400:
                    raise classify_http(
                        response.status_code,
                        await response.aread(),  # bounded by the wire guard
                        engine=self.engine_name,
                        url=self.base_url,
                        model=model,
                    )
                content = await read_capped(response, limit, f"an answer to {method} {path}")
        except httpx.HTTPError as exc:
            raise classify_transport(exc, engine=self.engine_name, url=self.base_url) from exc
        except WireError as exc:
            raise self._protocol_error(exc.what) from exc
        try:
            return json.loads(content)
        except RecursionError as exc:
            raise self._protocol_error(f"an answer to {method} {path} nested too deeply") from exc
        except ValueError as exc:
            raise self._protocol_error(f"a non-JSON answer to {method} {path}") from exc

    async def _get_json(self, path: str, *, model: str | None = None) -> Any:
        return await self._request_json("GET", path, model=model)

    async def _post_json(self, path: str, body: Any, *, model: str | None = None) -> Any:
        return await self._request_json("POST", path, body, model=model)

    async def aclose(self) -> None:
        await self._http.aclose()

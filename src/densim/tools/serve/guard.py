"""Who may talk to ``densim serve``: the ``Host`` and ``Origin`` checks.

The server has no login; it relies on listening on a loopback address. That alone does not stop a web
page in the user's browser from driving it:

* **DNS rebinding**: a page at ``http://evil.example:8765/`` whose name is made to resolve to
  127.0.0.1 reaches the server as a same-origin page and can read its answers. Its requests carry
  ``Host: evil.example:8765``, so every request whose ``Host`` is not a name of the address and port
  the request arrived on is refused (421).
* **Cross-site requests** (CSRF): any page can POST to ``http://127.0.0.1:8765/api/run`` (it cannot
  read the answer, but the run starts). A browser names the page in ``Origin`` and, in
  ``Sec-Fetch-Site``, how it relates to the target; a state-changing request (anything but
  GET/HEAD/OPTIONS, and websocket upgrades) whose ``Origin`` is present and not one of the server's
  own origins, or whose ``Sec-Fetch-Site`` is present and neither ``same-origin`` nor ``none`` (typed
  by the user), is refused (403). ``same-site`` is refused too: another port of localhost is the same
  *site* but another origin. Clients that are not browsers (curl, scripts) send neither header and are
  not affected.

The server's own names come from the address and port each connection arrived on (the ASGI
``server`` of the request, i.e. the socket's local address), so they hold for ``--port 0`` and for
``--host 0.0.0.0`` (a remote browser that uses the machine's address) without configuration: on a
loopback address ``127.0.0.1:PORT``, ``localhost:PORT`` and ``[::1]:PORT``; on another address that
address with the port; plus every name given with ``--allow-host`` (with the same port). Port 80 also
allows the names without a port (a browser leaves the default port out).

Starlette's ``TrustedHostMiddleware`` is not used: it drops the port before comparing (a page on
another local port would pass), cannot split an IPv6 ``[::1]:PORT`` host, and takes its list when the
application is built, before the port of ``--port 0`` is known.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketClose

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAFE_FETCH_SITES = frozenset({"same-origin", "none"})
ECHO = 80  # characters of a refused header quoted back


def echo(text: object, limit: int = ECHO) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters (then ``…`` and the full length)."""
    s = text if isinstance(text, str) else repr(text)
    if len(s) <= limit:
        return repr(text) if isinstance(text, str) else s
    return repr(s[:limit]) + f"… ({len(s):,} characters)"


def _literal(addr: str) -> str:
    """An address as it appears in a ``Host`` header: IPv6 in brackets."""
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return addr.lower()
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def _loopback(addr: str) -> bool:
    try:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        return False
    return ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped is not None and ip.ipv4_mapped.is_loopback)


def allowed_hosts(server: tuple[str, int | None] | list | None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` values a request that arrived on ``server`` (address, port) may carry."""
    if not server or server[1] is None:  # a Unix socket or an unknown address: nothing is allowed
        return frozenset()
    addr, port = str(server[0]), int(server[1])
    names = {_literal(addr), *(n.lower() for n in extra)}
    if _loopback(addr):
        names.update(LOOPBACK_NAMES)
    hosts = {f"{n}:{port}" for n in names}
    if port == 80:
        hosts |= names
    return frozenset(hosts)


class LocalOnly:
    """ASGI middleware refusing foreign ``Host`` names and cross-site state-changing requests.

    ``extra_hosts`` are further names (without port) the server answers to (``--allow-host``)."""

    def __init__(self, app: ASGIApp, extra_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.extra_hosts = tuple(extra_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, text = refusal
        if scope["type"] == "websocket":
            await WebSocketClose(code=1008, reason=text[:120])(scope, receive, send)  # policy violation
        else:
            await PlainTextResponse(text + "\n", status_code=status)(scope, receive, send)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, one line)`` when the request is refused, else None."""
        headers = Headers(scope=scope)
        hosts = allowed_hosts(scope.get("server"), self.extra_hosts)
        host = headers.get("host")
        if host is None or host.lower() not in hosts:
            names = ", ".join(sorted(hosts)) or "nothing"
            return 421, (f"densim serve: refused: Host {echo(host) if host is not None else '(none)'} is not this server "
                         f"(it answers to {names}; another name: start it with --allow-host NAME)")
        if scope["type"] == "websocket" or scope.get("method", "GET").upper() not in SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and origin.lower() not in {f"http://{h}" for h in hosts}:
                return 403, f"densim serve: refused: a request from another site (Origin {echo(origin)})"
            site = headers.get("sec-fetch-site")
            if site is not None and site.lower() not in SAFE_FETCH_SITES:
                return 403, f"densim serve: refused: a request from another site (Sec-Fetch-Site {echo(site)})"
        return None

"""Whether the service can listen on an address, asked before the server starts: a port in use or
a host that is not this machine's is then one line naming the address, not a server that logs its
start-up and then a bind error."""

from __future__ import annotations

import socket


def why_not_listening(host: str, port: int) -> str | None:
    """Why `host`:`port` cannot be listened on, or None when it can: each address the host resolves
    to is bound as the server binds it, then let go."""
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            with socket.socket(family, kind, proto) as probe:
                # as the server does, so a port whose last connections are in TIME_WAIT counts as free
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
    except OSError as exc:  # socket.gaierror too: a host name that does not resolve
        return (exc.strerror or str(exc)).lower()
    return None

"""What a command checks before it starts anything (a broker, a topic, a process): the root, the ports."""

from __future__ import annotations

import socket
from pathlib import Path

from streams.errors import ConfigError
from streams.settings import Settings

TOP_FOLDERS = ("inbox", "paper_cards", "work-queue", "living")


def root_problem(root: Path) -> str | None:
    """Why `root` cannot be watched (missing, not a folder, unreadable), or None."""
    if not root.exists():
        return f"root {root} does not exist"
    if not root.is_dir():
        return f"root {root} is not a folder"
    try:
        next(iter(root.iterdir()), None)
    except OSError as exc:
        return f"root {root} cannot be read ({exc.strerror})"
    return None


def require_root(settings: Settings) -> None:
    """ConfigError naming the root when it cannot be read: an empty briefing is no answer to a typo."""
    problem = root_problem(settings.root)
    if problem is not None:
        raise ConfigError(
            f"{problem}: set root (--root, PREDIGEST_ROOT or root in the config file) to the folder that "
            f"holds {', '.join(f'{t}/' for t in TOP_FOLDERS)}"
        )


def port_taken(host: str, port: int) -> str | None:
    """Why nothing can listen on host:port now (as the servers bind: SO_REUSEADDR), or None when it is free."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"{host} does not resolve ({exc.strerror})"
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def port_message(host: str, port: int, setting: str, why: str) -> str:
    """The one line for a port a server cannot listen on, naming the setting that moves it."""
    return (
        f"port {port} on {host} for {setting} is not available ({why}): stop what listens there "
        f"(another predigest?) or set {setting} (PREDIGEST_{setting.upper()})"
    )


def require_ports(settings: Settings, *settings_names: str) -> None:
    """ConfigError for the first of the named port settings (web_port, watcher_metrics_port) that is taken."""
    for name in settings_names:
        port = int(getattr(settings, name))
        why = port_taken(settings.web_host, port)
        if why is not None:
            raise ConfigError(port_message(settings.web_host, port, name, why))

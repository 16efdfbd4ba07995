"""What every CLI module shares: consoles, settings, the client, JSON output."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

from hybrid_es.settings import Settings

console = Console()
err_console = Console(stderr=True)


def settings() -> Settings:
    return Settings()


def client(s: Settings) -> Any:
    from hybrid_es.client import make_client

    return make_client(s)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")

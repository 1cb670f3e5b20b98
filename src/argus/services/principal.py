"""Who is asking: the authenticated identity every service call is scoped to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    id: int
    name: str
    is_admin: bool = False

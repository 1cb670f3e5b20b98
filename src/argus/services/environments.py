"""Training environments as users see them, and which tasks still need one (issues 22 and 33)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.core.messages import known_messages
from argus.core.paths import DataLayout
from argus.core.states import TERMINAL
from argus.db.models import TaskModel
from argus.envs.registry import Environment
from argus.services.principal import Principal
from argus.settings import Settings


def shown_to(env: Environment, principal: Principal, settings: Settings) -> dict[str, Any]:
    """What ``principal`` sees of ``env``: an admin all of it; a user no path of the server's — the interpreter
    of their own environment as ``$HOME/…``, of any other none, and the server's folders in a problem or note
    written as placeholders (the state dir, the data root, Argus's installation)."""
    out = env.public()
    if principal.is_admin:
        return out
    places = {str(DataLayout.at(settings.root).home(principal.name)): "$HOME", str(settings.root): "<data root>",
              str(settings.state_dir): "<state dir>", str(Path(sys.prefix)): "<argus>",
              str(Path(sys.base_prefix)): "<python>", str(Path(__file__).resolve().parents[2]): "<argus>"}
    if env.owner != principal.name:  # a cluster environment may live anywhere the operator put it
        places.update({env.prefix: f"<{env.name}>", str(Path(env.python).parent.parent): f"<{env.name}>"})

    def hidden(text: str) -> str:
        for real in sorted(places, key=len, reverse=True):  # the longest first: a home is inside the data root
            text = text.replace(real, places[real])
        return text

    out["python"] = hidden(env.python) if env.owner == principal.name else None
    out["problems"] = [hidden(p) for p in out["problems"]]
    out["notes"] = [hidden(n) for n in out["notes"]]
    out["note_messages"] = known_messages(out["notes"], "env.")  # of the notes as shown
    return out


def tasks_using(session: Session, env: str, limit: int = 20) -> list[str]:
    """Ids of the tasks not yet ended that run (or will run) in cluster environment ``env``."""
    ended = [s.value for s in TERMINAL]
    rows = session.scalars(
        select(TaskModel.id).where(TaskModel.spec_resolved["env"].as_string() == env, TaskModel.status.not_in(ended))
        .order_by(TaskModel.id).limit(limit))
    return list(rows)

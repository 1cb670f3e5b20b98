"""What a user may do to each entry of a folder listing, so a page offers only what the server will do.

The Data page used to offer Rename and Delete on every entry of a writable area, and the server refused
some: ``/teams/<team>`` and ``/common/<area>`` are the roots of their areas ("cannot change this folder
itself"), ``/common`` and ``/teams`` are the platform's own, and a live task's folder and logs are kept
(``UserFiles.remove``/``move`` and ``ConfinedPaths._parent``). This answers with the same rules, read the same
way (``_locate``: lexical, no file system access, so a folder of 100 000 entries costs no extra syscall):

* no area (``/common``, ``/teams`` themselves) or an area's root: nothing;
* an area the user may not write: nothing;
* an entry a live task needs (``protected``, services/active_jobs.py): nothing;
* else ``rename`` and ``delete``.

tests/api/test_file_actions_api.py tries every action on every listed entry and checks the server refuses
exactly those not offered.
"""

from __future__ import annotations

from typing import Any

from argus.errors import ArgusError
from argus.services.fs_paths import ConfinedPaths

CHANGE = ("rename", "delete")


def entry_actions(files: ConfinedPaths, path: str, protected: Any = None) -> list[str]:
    """The actions the server allows on ``path`` (a virtual path from a listing) for this user."""
    if protected:
        return []
    try:
        area, rel = files._locate(files.virtual(path), write=True)
    except ArgusError:  # a write there is refused outright
        return []
    if area is None or not rel or not area.writable:
        return []
    return list(CHANGE)

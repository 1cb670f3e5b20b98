"""Put the task owner's ``$HOME/code`` on ``sys.path`` — after the installed packages, never before.

Argus puts this folder (platform code, read-only in the jail) first on every task
process's PYTHONPATH; Python imports ``sitecustomize`` at start-up, and this one appends
``ARGUS_USER_CODE``. A user's helper modules and reward imports resolve from there, but a
``code/argus/`` or ``code/ray/`` can never shadow the platform's or Ray's own modules.
"""

import os
import sys

_code = os.environ.get("ARGUS_USER_CODE")
if _code and _code not in sys.path:
    sys.path.append(_code)
# Argus's own stdlib-only modules (argus.jobs.*: the doctor, the GPU probes) for a training environment that
# has no Argus installed; last, so an environment's own packages always win.
_src = os.environ.get("ARGUS_SRC")
if _src and _src not in sys.path:
    sys.path.append(_src)

"""A new user's first screens: the doctor task one click away, then data and a template.

The doctor (``argus.jobs.doctor``, ``examples/doctor.yaml``) is the first task to run: it needs no
GPU, goes the whole way (queue → Ray → driver on a worker → log) and its report answers "what will
my training task find on that node". The tasks page submits this spec through the ordinary
``POST /api/v2/tasks`` (admission judges it like any other), so the spec lives here once, on the
server, and the page's script only sends it.
"""

from __future__ import annotations

DOCTOR_SPEC = """\
kind: advanced
workload: job
name: doctor
nnodes: 1
n_gpus_per_node: 0
command: python3 -m argus.jobs.doctor --home $HOME --shared $HOME/common/datasets --shared $HOME/common/hf
"""

# The New Task templates a first run is offered, in this order (web/templates_catalog.NAMES has them all).
FIRST_TEMPLATES = ("basic-grpo", "basic-ppo", "basic-sft")

"""The Python SDK: ``from argus.client import Client`` (part of the ``argus`` package; no second install).

    from argus.client import Client
    c = Client("http://127.0.0.1:8080", token)
    task = c.submit("examples/grpo-basic.yaml")
    c.wait(task["task_id"], timeout=3600)

It speaks the same REST API as the CLI through the same HTTP client (``argus.client.http``).
"""

from argus.client.http import ApiError
from argus.client.sdk import Client, Files, Notifications, TaskTimeout, Teams

__all__ = ["ApiError", "Client", "Files", "Notifications", "TaskTimeout", "Teams"]

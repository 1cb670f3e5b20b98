"""The README's Python SDK example, run as written against a real server, scheduler and Ray cluster."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from argus.client import ApiError, Client, TaskTimeout
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    text = README.read_text()
    m = re.search(r"<!-- sdk-example -->\n```python\n(.*?)\n```", text, re.S)
    assert m, "README lost its SDK example"
    return m.group(1)


def test_readme_sdk_example_runs(stack: Stack) -> None:
    user = stack.user("sdk")
    token = user.headers["Authorization"].removeprefix("Bearer ")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_example(), "README.md:sdk-example", "exec"),  # noqa: S102 - the documented example
             {"URL": stack.server.url, "TOKEN": token})
    text = out.getvalue()
    assert "tiny.csv" in text
    assert "python3 -m argus.jobs.steps" in text  # the dry run's command
    assert "step:6 - loss:0.1667" in text and "SUCCEEDED SUCCEEDED" in text  # live log lines, then the end
    assert re.search(r"^step\s*$", text, re.M) or "Name: loss" in text  # a pandas Series indexed by step
    assert "[(2, 'complete'), (4, 'complete'), (6, 'complete')]" in text
    tasks = [line for line in text.splitlines() if line.startswith("['")]
    first = re.findall(r"job-\d{8}-\d{4}", text)[0]
    assert first in text.splitlines()[-2]  # the resumed task's resumed_from is the first task
    assert len(re.findall(r"job-\d{8}-\d{4}", tasks[-1])) == 2  # both succeeded


def test_sdk_errors_and_timeouts(stack: Stack) -> None:
    user = stack.user("sdk")
    c = Client(stack.server.url, user.headers["Authorization"].removeprefix("Bearer "))
    with pytest.raises(ApiError) as exc:
        c.submit({"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0, "command": "rm -rf /"})
    assert exc.value.status == 400 and exc.value.errors
    with pytest.raises(ApiError) as exc:
        c.get("job-19990101-0001")
    assert exc.value.status == 404
    tid = c.submit({"kind": "advanced", "workload": "job", "nnodes": 1, "n_gpus_per_node": 0,
                    "command": "python3 -m argus.jobs.sleep 30 --lines 30"})["task_id"]
    with pytest.raises(TaskTimeout):
        c.wait(tid, timeout=0.5, poll_s=0.1)
    assert c.cancel(tid)["status"] in ("CANCELED", "CANCELING")
    assert c.wait(tid, timeout=60, poll_s=0.2)["status"] == "CANCELED"
    c.files.put(b"x" * 70_000, "/code/blob.bin")
    assert c.files.get("/code/blob.bin") == b"x" * 70_000
    assert [e["size"] for e in c.files.ls("/code/blob.bin")] == [70_000]
    with pytest.raises(ApiError) as exc:
        c.files.get("/../other/x")
    assert exc.value.status in (403, 404)

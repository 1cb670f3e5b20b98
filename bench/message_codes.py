"""What coded messages (issue 37) cost the tasks list: checking a stored code still renders to its text.

    .venv/bin/python bench/message_codes.py

The API shows a task's pending_reason_code only while code + params render to pending_reason
(core/messages.from_stored). Prints the cost per row of a first sighting (a full render) and of a
repeated reason (a page of queued tasks repeats a few reasons), and a 500-row page of each.
"""

from __future__ import annotations

import json
import timeit

from argus.core import messages
from argus.core.messages import from_stored, msg, part


def main() -> None:
    m = msg("queue.gpus_reserved", nnodes=2, need=[part("part.gpus", n=4), part("part.cpus", n=12)],
            free=[part("part.gang", nnodes=1, gpus=3), part("part.gang", nnodes=2, gpus=2)],
            reserved_for=part("part.task_of_class", task="ppo-000123", priority_class="urgent"),
            ).then("part.priority_class", priority_class="urgent")
    stored = json.loads(json.dumps(m.params))  # as read back from the database: equal, not the same object
    n = 5000

    def first() -> None:
        messages._verified.clear()
        from_stored(m.code, stored, m.text)

    cold = min(timeit.repeat(first, number=n, repeat=3)) / n
    warm = min(timeit.repeat(lambda: from_stored(m.code, stored, m.text), number=n, repeat=3)) / n
    print(f"from_stored, a reason with lists, a nested task and a suffix ({len(m.text)} characters):")
    print(f"  first sighting (render): {cold * 1e6:7.1f} µs/row, {cold * 500 * 1e3:6.2f} ms per 500 rows")
    print(f"  repeated reason        : {warm * 1e6:7.1f} µs/row, {warm * 500 * 1e3:6.2f} ms per 500 rows")


if __name__ == "__main__":
    main()

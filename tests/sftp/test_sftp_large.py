"""A 1 GiB upload and download through the server in its own process, with the SFTP process's memory (RSS) flat."""

from __future__ import annotations

import subprocess
import threading
import time

from tests.sftp_process import sftp_server_process

GIB = 1 << 30


def _rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_one_gib_transfer_with_flat_server_memory(tmp_path):
    samples: list[int] = []
    stop = threading.Event()
    with sftp_server_process(tmp_path, "alice") as srv:
        big = tmp_path / "big.bin"
        with big.open("wb") as f:  # sparse: 1 GiB of zeros costs no disk on the client side
            f.truncate(GIB)
        pid = srv.sftp_pid()
        baseline = _rss_kib(pid)

        def sample() -> None:
            while not stop.is_set():
                samples.append(_rss_kib(pid))
                time.sleep(0.2)  # the sampling pace, not a wait

        threading.Thread(target=sample, daemon=True).start()
        try:
            p = subprocess.run(srv.sftp_cmd(), input="put big.bin /datasets/big.bin\nget /datasets/big.bin back.bin\n",
                               text=True, capture_output=True, cwd=tmp_path, timeout=180)
        finally:
            stop.set()
    assert p.returncode == 0, p.stderr
    stored = tmp_path / "state" / "private" / "users" / "alice" / "datasets" / "big.bin"
    assert stored.stat().st_size == GIB and (tmp_path / "back.bin").stat().st_size == GIB
    with (tmp_path / "back.bin").open("rb") as f:
        f.seek(GIB // 2)
        assert f.read(1 << 20) == bytes(1 << 20)
    growth_mib = (max(samples) - baseline) / 1024
    assert len(samples) > 10
    assert growth_mib < 150, f"server RSS grew by {growth_mib:.0f} MiB during a 1 GiB transfer"

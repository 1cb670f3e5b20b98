"""Upload/download throughput of a 1 GB file over loopback: Argus's SFTP server vs OpenSSH's sftp-server.

    .venv/bin/python bench/sftp.py [--size-mb 1024] [--cipher aes128-gcm@openssh.com]

Both sides use the same client (OpenSSH `sftp` in batch mode). OpenSSH's server
runs as `sftp -D /usr/lib/openssh/sftp-server`: no sshd, no SSH transport, so NO
encryption or MAC at all on that side. The ratio therefore also charges Argus for
its SSH encryption: it is an upper-bound comparison (the gap a user sees against
a real sshd, which encrypts too, is smaller). The cipher the client negotiated
with Argus is printed (parsed from `sftp -v`): with asyncssh's default list an
OpenSSH client picks chacha20-poly1305 (its own first choice). The Argus server
runs as `argus server` in a subprocess through ``argus.server.run_server`` with
only the SFTP component.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.sftp_process import sftp_server_process  # noqa: E402

SFTP_SERVER = "/usr/lib/openssh/sftp-server"
CIPHER_LINE = re.compile(r"kex: (server->client cipher: .*)")


def timed(cmd: list[str], script: str, cwd: Path, seen: list[str] | None = None) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, input=script, text=True, capture_output=True, cwd=cwd)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    if seen is not None:  # with -v: "debug1: kex: server->client cipher: X MAC: Y compression: Z"
        seen += [m.group(1) for m in CIPHER_LINE.finditer(p.stderr)]
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--cipher", help="ask the client for this cipher with Argus (sftp -c); default: negotiate")
    args = ap.parse_args()
    if not Path(SFTP_SERVER).exists():
        sys.exit(f"{SFTP_SERVER} missing: apt-get install -y openssh-sftp-server")
    size = args.size_mb * 1024 * 1024
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        data = tmp / "data.bin"
        with data.open("wb") as f:  # random data: nothing compresses or skips holes
            block = os.urandom(1 << 20)
            for _ in range(args.size_mb):
                f.write(block)
        with sftp_server_process(tmp, "bench", quiet=True) as srv:
            argus = srv.sftp_cmd("-v", *(["-c", args.cipher] if args.cipher else []))
            openssh = ["sftp", "-b", "-", "-D", SFTP_SERVER]
            (tmp / "remote").mkdir()
            results = {}
            ciphers: list[str] = []
            results["argus up"] = timed(argus, "put data.bin /datasets/data.bin\n", tmp, ciphers)
            results["argus down"] = timed(argus, "get /datasets/data.bin down1.bin\n", tmp, ciphers)
            results["openssh up"] = timed(openssh, f"put data.bin {tmp / 'remote' / 'data.bin'}\n", tmp)
            results["openssh down"] = timed(openssh, f"get {tmp / 'remote' / 'data.bin'} down2.bin\n", tmp)
            assert (tmp / "down1.bin").stat().st_size == size == (tmp / "down2.bin").stat().st_size
    mb = size / 1e6
    print(f"file: {args.size_mb} MiB random data, loopback, client: OpenSSH sftp")
    print(f"  argus:   SSH, {sorted(set(ciphers))[0] if ciphers else 'cipher not reported'}")
    print("  openssh: `sftp -D sftp-server`, a pipe with no SSH transport: no encryption, no MAC;"
          " the ratio is an upper-bound comparison")
    for k, v in results.items():
        print(f"  {k:13s} {v:6.2f} s  {mb / v:7.1f} MB/s")
    for d in ("up", "down"):
        print(f"  ratio {d:5s} argus/openssh throughput = {results[f'openssh {d}'] / results[f'argus {d}']:.2f}")


if __name__ == "__main__":
    main()

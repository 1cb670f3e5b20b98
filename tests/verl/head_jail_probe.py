"""Every trick a user's code on the head could try against its jail; run inside it, prints one JSON report.

Imported as a reward module (``argus.jobs.reward_check`` imports it, the import raises with the report) or
run as a user environment's interpreter (it answers the validator's hello with the report as its error).
Each entry is ``blocked: <why>`` or ``ESCAPED: <what it got>``. ``TARGETS`` (JSON in the environment of the
process that made the jail would leak: so it is written into this file's copy instead) names the secrets.
"""

import ctypes
import json
import os
import socket

TARGETS: dict = {}  # replaced in the copy the test writes: {"secrets": {name: path}, "state": …, …}

MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
MNT_DETACH = 2
libc = ctypes.CDLL(None, use_errno=True)
report: dict[str, str] = {}


def attempt(name, fn):  # noqa: ANN001, ANN201
    try:
        got = fn()
    except Exception as e:  # noqa: BLE001 - every failure is the jail holding
        report[name] = f"blocked: {type(e).__name__}: {e}"[:200]
        return
    report[name] = f"ESCAPED: {got!r}"[:300]


def syscall(rc: int) -> str:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return "the call succeeded"


def refused(condition: bool, why: str) -> str:
    if not condition:
        raise PermissionError(why)
    return why


def probe() -> dict[str, str]:
    t = TARGETS
    for name, path in t["secrets"].items():
        attempt(f"read {name}", lambda p=path: open(p).read())
        attempt(f"read {name} through /proc/1/root", lambda p=path: open("/proc/1/root" + p).read())
    attempt("write into another home", lambda: open(os.path.join(t["other_home"], "planted"), "w").write("x"))
    attempt("write into the state dir", lambda: open(os.path.join(t["state"], "planted"), "w").write("x"))
    for name, path in (("state dir", t["state"]), ("data root", t["root"])):
        attempt(f"unmount what covers the {name}", lambda p=path: syscall(libc.umount2(p.encode(), MNT_DETACH)))
        attempt(f"mount a new tmpfs on the {name}",
                lambda p=path: syscall(libc.mount(b"tmpfs", p.encode(), b"tmpfs", 0, None)))
    attempt("remount / read-write", lambda: syscall(libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None)))
    attempt("setns into pid 1's mount namespace",
            lambda: syscall(libc.setns(os.open("/proc/1/ns/mnt", os.O_RDONLY), 0)))
    attempt("a new user namespace (all capabilities in it)", lambda: syscall(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS)))
    for name, path in t["secrets"].items():  # once more: had a trick above undone a cover, this would show it
        attempt(f"read {name} after the tricks", lambda p=path: open(p).read())
    attempt("root inside", lambda: refused(os.getuid() == 0 or os.geteuid() == 0, f"uid {os.getuid()}"))
    cap = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff:"))
    attempt("a capability", lambda: refused(int(cap, 16) != 0, f"CapEff {cap}"))
    leaked = sorted(k for k, v in os.environ.items() if k.startswith("ARGUS_") or t["token"] in v)
    attempt("the server's environment", lambda: refused(bool(leaked), f"{len(os.environ)} variables, none of it"))

    def host_process() -> str:
        seen = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if t["marker"].encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                    seen.append(pid)
            except OSError:
                pass
        return refused(bool(seen), f"pids {seen}")

    attempt("see the server's process", host_process)
    attempt("connect to the server on loopback",
            lambda: socket.create_connection(("127.0.0.1", t["port"]), timeout=2).close() or "connected")
    return report


if __name__ == "__main__":  # as a user environment's interpreter: the report is the validator hello's error
    print(json.dumps({"ready": False, "error": "REPORT " + json.dumps(probe())}), flush=True)
elif TARGETS:  # imported as a reward module
    raise RuntimeError("REPORT " + json.dumps(probe()))

"""Why did a task's process fail? The root-cause exception line from the tail of its log, and a typed
diagnosis with a fix (pure).

A FAILED task that only says "exit code 1" sends every user to the log. The cause is
nearly always the last Python exception printed before the exit, in one of a few shapes:

* a plain traceback ending in ``ModuleNotFoundError: No module named 'transfer_queue'``
  (Hydra's ``@hydra.main`` adds "Set the environment variable HYDRA_FULL_ERROR=1 …" after it);
* a Ray chain: the driver's traceback ends with
  ``ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=…)``, then the actor's
  frames and the real ``ValueError: …`` line; an actor's own output carries a prefix such as
  ``(TaskRunner pid=4242)`` (ANSI-coloured by default) and interleaves with other actors' lines;
* torchrun: each rank's traceback is prefixed ``[rank0]:``, then torchrun's own traceback
  ends in ``torch.distributed.elastic.multiprocessing.errors.ChildFailedError`` and a summary
  box; the root cause is the rank's exception *before* it.

:func:`failure_cause` reads those shapes and returns the exception line, or None when the
text has no recognisable exception (the message then stays "exit code N").

:func:`diagnose` goes further, because the last exception often names a consequence, not the cause,
and never says what to change:

* one rank's ``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …`` leaves the other ranks
  waiting until their NCCL watchdogs fire (``[Rank 0] Watchdog caught collective operation timeout:
  WorkNCCL(… OpType=_ALLGATHER_BASE … Timeout(ms)=600000) ran for 600044 milliseconds``), and torchrun's
  summary then blames a SIGABRT;
* Ray's memory monitor kills a worker for host RAM (``ray.exceptions.OutOfMemoryError: Task was killed due
  to the node running low on memory.`` then ``Memory on the node (IP: …) where the task (…, name=…,
  pid=…, memory used=…) was running was 250.04GB / 251.00GB (0.996), which exceeds …``); the driver sees
  it wrapped as ``RayTaskError(OutOfMemoryError)``, which is not the GPU's OutOfMemoryError;
* the kernel's OOM killer leaves no Python error at all: exit code 137 / -9, bash's ``Killed``, torchrun's
  ``Signal 9 (SIGKILL)``, or Ray's "Worker unexpectedly exits … (1) The process is killed by SIGKILL by
  OOM killer …" — which Ray also prints for an actor that aborted on an NCCL timeout or that SGLang
  SIGQUIT, so it is only a guess, taken when nothing firmer is there;
* vLLM prints its reason (``ValueError: … KV cache is needed, which is larger than the available KV cache
  memory …``) from its engine process before ``RuntimeError: Engine core initialization failed. See root
  cause above.`` reaches the driver; SGLang prints ``RuntimeError: Not enough memory. Please try to
  increase --mem-fraction-static`` after "Scheduler hit an exception".

It sorts what it finds into first causes, failures that are usually consequences (NCCL, an engine's
summary) and guesses (a SIGKILL); the earliest of the firmest kind wins. The answer is a
:class:`FailureKind`, the line to show after "exit code N: ", where (actor, rank, GPU, node) and a hint
that names the verl setting (or the spec's key) to change.

:func:`node_lost_message` does the same for a lost node: one line out of Ray's multi-line dump.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

TAIL_BYTES = 64 * 1024  # how much of the end of a log (or of Ray's driver log) the monitor reads
# How much of the end of an attempt's own log a failure is diagnosed from: a real GRPO run whose reward raised
# printed 89 KiB of other actors' tracebacks and shutdown noise after the reward's own (issue 34).
DIAGNOSE_BYTES = 512 * 1024
MAX_CAUSE_CHARS = 300

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# "(TaskRunner pid=4242)", "(WorkerDict pid=7, ip=10.0.0.7)", "(raylet)", "[rank0]:", "[default0]:"
_PREFIX = re.compile(r"^(?:\((?P<ray>(?:[\w.:<>-]+ )?pid=\d+(?:, ip=[\w.:-]+)?|raylet|autoscaler[^)]*)\) ?"
                     r"|\[(?P<rank>(?:rank|default)\d+)\]: ?)")
_LINES = re.compile(r"\r\n|\r|\n")
_TRACEBACK = "Traceback (most recent call last):"
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
# ``ValueError: msg``, ``torch.OutOfMemoryError: …``, ``ray.exceptions.RayTaskError(ValueError): …``, ``AssertionError``
_EXC = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:\([\w.]+\))?)(?::(?P<msg>.*))?$")
_EXC_NAME = re.compile(r"(?:Error|Exception|Exit|Interrupt|Failure|Fault|Warning|Iteration)(?:\([\w.]+\))?$")
# printed after the real cause: torchrun's summary of a failed rank, ranks/actors interrupted at shutdown
_SECONDARY = ("ChildFailedError", "KeyboardInterrupt")


def _split(line: str) -> tuple[str, str]:
    """(source, text): the Ray actor / torchrun rank that printed a line ("" for the process itself)."""
    line = _ANSI.sub("", line)
    m = _PREFIX.match(line)
    if not m:
        return "", line
    return (m.group("ray") or m.group("rank") or ""), line[m.end():]


def _exception_line(text: str) -> str | None:
    m = _EXC.match(text.rstrip())
    if not m or not _EXC_NAME.search(m.group("name")):
        return None
    return text.strip()


def _short_name(line: str) -> str:
    name = line.split(":", 1)[0]
    return name.rsplit(".", 1)[-1]


def failure_cause(text: str) -> str | None:
    """The root-cause exception line of the last traceback in ``text`` (a log tail), or None."""
    found = _root_cause(text)
    return found[1] if found else None


def _root_cause(text: str) -> tuple[int, str] | None:
    """(line number, exception line) of :func:`failure_cause`'s answer."""
    blocks: list[tuple[int, str]] = []  # (line number, final exception line) of each traceback
    reading: dict[str, tuple[int, str] | None] = {}  # source -> its open traceback's exception so far
    loose: tuple[int, str] | None = None  # an exception line seen outside any traceback (fallback)
    for n, raw in enumerate(_LINES.split(text)):
        who, line = _split(raw)
        if line.startswith(_TRACEBACK):
            if reading.get(who):
                blocks.append(reading[who])  # type: ignore[arg-type]
            reading[who] = None
            continue
        if who not in reading:
            exc = _exception_line(line)
            if exc and ":" in exc and re.search(r"Error|Exception", exc.split(":", 1)[0]):
                loose = (n, exc)
            continue
        if not line.strip() or line[:1].isspace() or line.startswith(_CHAIN):
            continue  # frames, source lines, ^^^^ markers, blank lines, "During handling of …"
        exc = _exception_line(line)
        if exc:
            reading[who] = (n, exc)  # a Ray chain goes on with the actor's frames and its real exception
            continue
        found = reading.pop(who)
        if found:  # the first other line after the exception ends the traceback
            blocks.append(found)
    blocks.extend(found for found in reading.values() if found)
    if not blocks:
        return (loose[0], _clip(loose[1])) if loose else None
    blocks.sort()
    for n, cause in reversed(blocks):
        if _short_name(cause) not in _SECONDARY:
            return n, _clip(cause)
    return blocks[-1][0], _clip(blocks[-1][1])


def _clip(line: str) -> str:
    """One printable line (a status message: no NUL for PostgreSQL, no escape codes), at most MAX_CAUSE_CHARS."""
    line = "".join(c for c in " ".join(line.split()) if c.isprintable())
    return line if len(line) <= MAX_CAUSE_CHARS else line[:MAX_CAUSE_CHARS - 1] + "…"


def failure_message(exit_code: int, cause: str | None) -> str:
    """``exit code 1: ModuleNotFoundError: No module named 'transfer_queue'`` (or just ``exit code 1``)."""
    return f"exit code {exit_code}: {cause}" if cause else f"exit code {exit_code}"


def memory_limit_cause(kills: int, limit_bytes: int | None) -> str:
    """The one wording of a task killed inside its memory cgroup, said by the attempt's launcher (its bounds)
    and by the monitor (the driver's counters) alike; the limit in MiB, as memory_per_node is usually written."""
    size = f" of {limit_bytes / 2**20:g} MiB" if isinstance(limit_bytes, int) and limit_bytes > 0 else ""
    return (f"the kernel's OOM killer killed {kills} process{'es' if kills > 1 else ''} of the task: it outgrew "
            f"its memory limit{size} (memory_per_node)")


# ---------------------------------------------------------------------------------------------
# The typed diagnosis: what kind of failure, in one line, where, and what to change.


class FailureKind(StrEnum):
    """What a failure came from (stored as ``tasks.failure_kind``)."""

    HOST_OOM = "host_oom"  # Ray's memory monitor or the kernel's OOM killer killed a process (host RAM)
    GPU_OOM = "gpu_oom"  # torch's CUDA out of memory
    NCCL_TIMEOUT = "nccl_timeout"  # NCCL watchdog / collective timeout / communicator aborted / DistBackendError
    ROLLOUT_ENGINE = "rollout_engine"  # vLLM / SGLang could not start (KV cache too small, engine core init, ...)
    MISSING_FILE = "missing_file"  # FileNotFoundError / No such file or directory
    PERMISSION = "permission"  # PermissionError / Permission denied / read-only file system
    USER_CODE = "user_code"  # the user's own code raised: a frame of the traceback is outside every installed package
    PYTHON_EXCEPTION = "python_exception"  # anything else with a recognisable exception line
    PIDS_LIMIT = "pids_limit"  # the task reached its processes-and-threads limit (pids.max, issue 36)
    DISK_FULL = "disk_full"  # the task filled its private /tmp (a sized tmpfs, issue 36)
    TASK_RUNTIME = "task_runtime"  # what Argus runs around the command died: the task's private Ray or its sandbox


@dataclass(frozen=True)
class Diagnosis:
    kind: FailureKind
    cause: str  # one line (<= MAX_CAUSE_CHARS), shown after "exit code N: "
    where: str | None  # the process / worker / rank / GPU / node, when the log says
    hint: str  # one line a user can act on


_HINTS = {
    FailureKind.HOST_OOM:
        "The node ran out of host memory (RAM): offload less to CPU (fsdp_config.param_offload / "
        "optimizer_offload), run fewer rollout workers, lower data.dataloader_num_workers, or reserve more "
        "with memory_per_node in the spec",
    FailureKind.GPU_OOM:
        "Out of GPU memory: lower the micro batches (actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu, "
        "*.log_prob_micro_batch_size_per_gpu), lower actor_rollout_ref.rollout.gpu_memory_utilization, set "
        "actor_rollout_ref.actor.fsdp_config.param_offload=True, keep "
        "actor_rollout_ref.model.enable_gradient_checkpointing=True",
    FailureKind.NCCL_TIMEOUT:
        "A collective timed out or was aborted: usually one rank stalled or died first (look for its error "
        "above: OOM, exception, killed), else the network / InfiniBand between nodes; raise "
        "actor_rollout_ref.nccl_timeout (seconds) only if steps are legitimately that slow",
    FailureKind.ROLLOUT_ENGINE:
        "The rollout engine could not start: check actor_rollout_ref.rollout.gpu_memory_utilization, "
        "max_model_len / max_num_batched_tokens, tensor_model_parallel_size against the GPUs per node, and "
        "that the vLLM / SGLang version matches the training environment",
    FailureKind.MISSING_FILE:
        "A file the task reads is not there: upload it to your home (sftp or `argus files put`) and write "
        "its path as $HOME/...; shared data is read from $HOME/common/datasets and $HOME/common/hf",
    FailureKind.PERMISSION:
        "The task was refused access: a task writes only inside your home ($HOME/...); "
        "$HOME/common/datasets and $HOME/common/hf are read-only, so point outputs such as "
        "trainer.default_local_dir under $HOME",
    FailureKind.USER_CODE:
        "Your own code raised (a reward function, a dataset or a script of yours): fix it at the frame named "
        "here; a reward function can be tried on your data before you submit (the spec's reward check at "
        "submit runs it on sample rows)",
    FailureKind.PIDS_LIMIT:
        "The task started more processes and threads than a task may on a node (task_pids_max): look for a "
        "loop that forks or spawns workers (data.dataloader_num_workers, a reward function that starts "
        "processes), or ask the operator to raise task_pids_max",
    FailureKind.DISK_FULL:
        "The task filled its private /tmp, which is small and counts in its memory: write large files "
        "(checkpoints, datasets, caches) under $HOME, e.g. trainer.default_local_dir=$HOME/checkpoints/..., "
        "or ask the operator to raise task_tmp_mb",
    FailureKind.TASK_RUNTIME:
        "What Argus runs around your command died (the task's private Ray or its sandbox), not your code: "
        "another attempt starts if the task has retries left (max_retries); if it happens again, tell the "
        "operator: the node may be short of memory or processes, or something on it kills processes",
    FailureKind.PYTHON_EXCEPTION:
        "Read the traceback above this error in the task's log (`argus logs <task id>`): its last frames "
        "name the file and line that raised it",
}


def hint_for(kind: FailureKind) -> str:
    """The generic hint for ``kind`` (:func:`diagnose` may give a more specific one)."""
    return _HINTS[kind]


# The specific hints :func:`diagnose` gives, by code (issue 37): each is built here by filling its template, and
# core/messages.py serves it as ``hint.<name>`` (its template behind the ``{where}`` prefix the scheduler adds), so
# the WebUI says a stored English hint in the reader's language. ``{name}`` is a parameter (str.format's syntax and
# messages.render's agree for these: strings and ints). An optional part is a second code, not a condition.
HINTS_EN: dict[str, str] = {
    "hint.gpu_oom_rollout":
        "Out of GPU memory in the rollout engine: lower actor_rollout_ref.rollout.gpu_memory_utilization "
        "or max_num_batched_tokens, or free the GPU for it with "
        "actor_rollout_ref.actor.fsdp_config.param_offload=True",
    "hint.gpu_oom_ref_log_prob":
        "Out of GPU memory computing the reference log-probs: lower "
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu (or log_prob_max_token_len_per_gpu), "
        "or set actor_rollout_ref.ref.fsdp_config.param_offload=True",
    "hint.gpu_oom_log_prob":
        "Out of GPU memory computing log-probs: lower "
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu (or log_prob_max_token_len_per_gpu), "
        "or set actor_rollout_ref.actor.fsdp_config.param_offload=True",
    "hint.gpu_oom_critic":
        "Out of GPU memory in the critic: lower critic.ppo_micro_batch_size_per_gpu (or "
        "ppo_max_token_len_per_gpu), keep critic.model.enable_gradient_checkpointing=True",
    "hint.gpu_oom_actor":
        "Out of GPU memory in the actor update: lower actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu "
        "(or ppo_max_token_len_per_gpu), keep actor_rollout_ref.model.enable_gradient_checkpointing=True, "
        "set actor_rollout_ref.actor.fsdp_config.param_offload=True, or lower "
        "actor_rollout_ref.rollout.gpu_memory_utilization",
    "hint.gpu_oom_sft":
        "Out of GPU memory in SFT: lower data.micro_batch_size_per_gpu (or data.max_token_len_per_gpu), "
        "keep model.enable_gradient_checkpointing=True, or set engine.param_offload=True",
    "hint.sigkill":
        "No Python error and a SIGKILL usually mean the kernel's OOM killer (host RAM): offload less to "
        "CPU (fsdp_config.param_offload / optimizer_offload), run fewer rollout workers, lower "
        "data.dataloader_num_workers, or reserve more with memory_per_node in the spec",
    "hint.vllm_config":  # settings: the keys, "actor_rollout_ref.rollout.<k>" joined by ", "
        "vLLM refused its configuration: set {settings} "
        "so that the condition in the message holds (verl passes these to vLLM as they are)",
    "hint.kv_cache":
        "The KV cache does not fit: raise actor_rollout_ref.rollout.gpu_memory_utilization or lower "
        "actor_rollout_ref.rollout.max_model_len (prompt + response length), or use a larger "
        "tensor_model_parallel_size",
    "hint.gpu_not_free":
        "The GPU was not free enough when the engine started: lower "
        "actor_rollout_ref.rollout.gpu_memory_utilization, or offload the trainer's weights with "
        "actor_rollout_ref.actor.fsdp_config.param_offload=True",
    "hint.sglang_kv_cache":
        "SGLang's weights left no room for its KV cache: raise actor_rollout_ref.rollout.gpu_memory_utilization "
        "(SGLang's mem_fraction_static), lower max_model_len, or use a larger tensor_model_parallel_size",
    "hint.tensor_parallel":
        "actor_rollout_ref.rollout.tensor_model_parallel_size must divide the model's attention heads "
        "and be at most the GPUs per node",
    # ranks: joined by ", "; seconds: an int; op: the collective (OpType). The code for a log that names none is
    # first: messages.specific_hint tries templates in this order, and "in a collective" matches both
    "hint.nccl_ranks_waited_collective":
        "Ranks {ranks} waited {seconds}s in a collective: a rank that is not listed stalled or died first "
        "(look for its error above: OOM, exception, killed), else the network / InfiniBand; raise "
        "actor_rollout_ref.nccl_timeout only if steps are legitimately that slow",
    "hint.nccl_ranks_waited":
        "Ranks {ranks} waited {seconds}s in {op}: a rank that is not listed stalled or died first "
        "(look for its error above: OOM, exception, killed), else the network / InfiniBand; raise "
        "actor_rollout_ref.nccl_timeout only if steps are legitimately that slow",
    "hint.nccl_peer_gone":
        "A peer ({peer}) went away mid-collective: its rank died first "
        "(look for its error above: OOM, exception, killed) or the network / InfiniBand between the nodes "
        "failed; check that node's links (NCCL_DEBUG=INFO names them)",
    "hint.nccl_peer_gone_unknown":
        "A peer went away mid-collective: its rank died first "
        "(look for its error above: OOM, exception, killed) or the network / InfiniBand between the nodes "
        "failed; check that node's links (NCCL_DEBUG=INFO names them)",
    "hint.missing_path":
        "{path} is not there when the task runs: upload it to your home (sftp or `argus files put`) and "
        "write its path as $HOME/...; shared data is read from $HOME/common/datasets and $HOME/common/hf",
    "hint.permission_path":
        "The task was refused {path}: a task writes only inside your home ($HOME/...); "
        "$HOME/common/datasets and $HOME/common/hf are read-only, so point outputs such as "
        "trainer.default_local_dir under $HOME",
}


def _hint(code: str, **params: str | int) -> str:
    """The specific hint ``code`` (:data:`HINTS_EN`) with ``params``: the English messages.py renders too."""
    return HINTS_EN[code].format(**params)


# How a line can begin, outermost first. Ray: "(WorkerDict pid=7, ip=10.0.0.7)", "(raylet, ip=…)";
# torchrun / c10 logging: "[rank3]:"; vLLM's logger: "ERROR 11-21 14:02:11 [core.py:708] "; SGLang's:
# "[2026-11-21 14:30:02 TP0] "; glog (torch c10, torchrun): "[E1121 11:42:55.318 ProcessGroupNCCL.cpp:632] ",
# "W1121 11:43:01.772000 4242 site-packages/torch/…/api.py:897] "; Ray's C++: "[2026-… E 3301 3335] (raylet) x.cc:1: "
_RAY_SOURCE = re.compile(r"\((?P<who>(?:[\w.:<>-]+ )?pid=\d+(?:, ip=[\w.:-]+)?|raylet(?:, ip=[\w.:-]+)?"
                         r"|autoscaler[^)]*)\) ?")
_RANK_SOURCE = re.compile(r"\[(?:rank|default)(?P<rank>\d+)\]: ?")
_LOG_HEAD = re.compile(
    r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [IWEF] \d+ \d+\] (?:\(\w+\) )?[\w./-]+:\d+: "
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./-]+:\d+\] "
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?P<tp>[A-Z]{2}\d+(?: [A-Z]{2}\d+)*))?\] "
    r"|\[?[IWEF](?:\d{4} \d\d:\d\d:\d\d\.\d+(?: +\d+)? )?[\w./-]+\.(?:cpp|cc|hpp|h|py):\d+\] ?")
_REPEATED = re.compile(r"\[repeated \d+x across cluster\]\s*$")


@dataclass(frozen=True)
class _Line:
    actor: str  # the outermost Ray prefix ("WorkerDict pid=7, ip=10.0.0.7", "raylet") or ""
    rank: str  # "rank3" (torchrun / c10 "[rank3]:") or ""
    tp: str  # SGLang's "TP0" or ""
    text: str  # what the line says, without those prefixes

    @property
    def key(self) -> tuple[str, str]:
        return self.actor, self.rank

    @property
    def indented(self) -> bool:
        return self.text[:1].isspace()


def _lines(tail: str) -> list[_Line]:
    out = []
    for raw in _LINES.split(tail):
        text, actor, rank, tp = _ANSI.sub("", raw), "", "", ""
        while True:
            if m := _RAY_SOURCE.match(text):
                actor = actor or m.group("who")
            elif m := _RANK_SOURCE.match(text):
                rank = rank or f"rank{m.group('rank')}"
            elif m := _LOG_HEAD.match(text):
                tp = tp or m.group("tp") or ""
            else:
                break
            text = text[m.end():]
        repeated = _REPEATED.search(text)  # Ray's dedup: "… [repeated 7x across cluster]"
        out.append(_Line(actor, rank, tp, text[:repeated.start()].rstrip() if repeated else text))
    return out


def _is_exception(line: _Line) -> bool:
    return not line.indented and _exception_line(line.text) is not None


_GPU_OOM = re.compile(r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory")
_GPU_OOM_NCCL = re.compile(r"Cuda failure '?out of memory")  # NCCL's "Last error:" under ncclUnhandledCudaError
_RAY_OOM = re.compile(r"killed due to the node running low on memory|ray\.exceptions\.OutOfMemoryError"
                      r"|killed due to memory pressure")
_ENGINE_ROOT = re.compile(
    r"No available memory for the cache blocks"  # vLLM V0
    r"|larger than the maximum number of tokens that can be stored in KV cache"  # vLLM
    r"|KV cache is needed, which is larger than the available KV cache memory"  # vLLM V1
    r"|on startup is less than desired GPU memory utilization"  # vLLM V1: the GPU is not free enough
    r"|Not enough memory\. Please try to increase --mem-fraction-static"  # SGLang
    r"|must be divisible by tensor parallel size")  # vLLM: heads vs tensor_model_parallel_size
# the processes of a rollout engine: verl's vLLM/SGLang server actors and vLLM's engine core
_ENGINE_ACTOR = re.compile(r"(?:vLLM\w*Server|SGLang\w*Server|\w*EngineCore\w*)\b")
# vLLM's own settings that verl sets as actor_rollout_ref.rollout.<same name>
_ENGINE_SETTINGS = ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "gpu_memory_utilization")
_ENGINE_FAILED = re.compile(
    r"EngineCore failed to start|Engine core initialization failed|WorkerProc initialization failed"
    r"|Scheduler hit an exception|scheduler is dead|Initialization failed\. Please see the error messages above")
_NCCL = re.compile(
    r"Watchdog caught collective operation timeout|NCCL communicator was aborted|DistBackendError"
    r"|NCCL error in:|\bnccl(?:Remote|System|Internal|UnhandledCuda|InvalidUsage)Error\b"
    r"|Some NCCL operations have failed or timed out|watchdog thread terminated with exception")
_WATCHDOG = re.compile(r"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: "
                       r"WorkNCCL\((?P<work>.*?)\) ran for (?P<ran>\d+) milliseconds")
_ABORTED = re.compile(r"NCCL communicator was aborted on rank (?P<rank>\d+)")
_NCCL_SOURCE = re.compile(r"(?<=NCCL error) in: \S+:\d+,")
# Ray's words for a worker that vanished without a Python error (the kernel's OOM killer first among them)
_WORKER_KILLED = re.compile(r"killed by SIGKILL by OOM killer|killed by the OOM killer"
                            r"|may have exceeded K8s pod memory limits")
_SHELL_KILLED = re.compile(r"(?:\S.*: line \d+: +\d+ +)?Killed(?: {2,}\S.*)?$")  # bash: "…: line 3: 42 Killed  cmd"
_SIGKILL_EXITS = (137, -9)
# the launcher's own words when the task's private Ray (launcher/private_ray.py) or its sandbox (launcher/driver.py) died
_RUNTIME_DIED = re.compile(r"\[argus\] error: the task's (?:private Ray|sandbox) (?:died|\(.*\) was killed)")
_MISSING = re.compile(r"FileNotFoundError|No such file or directory|\[Errno 2\]|Unable to find '"
                      r"|Incorrect path_or_model_id|is not the path to a directory containing")
_PERMISSION = re.compile(r"PermissionError|Permission denied|\[Errno 13\]|Read-only file system|\[Errno 30\]")
# exceptions that report someone else's failure: never a first cause on their own
_FOLLOW_ON = {"ActorDiedError", "RayActorError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError",
              "RaySystemError", "ChildFailedError", "KeyboardInterrupt", "SystemExit", "TaskCancelledError"}

_RAY_HEADER = re.compile(r"RayTaskError(?:\([\w.]+\))?: ray::(?P<who>[\w.<>]+)\(\) \(pid=(?P<pid>\d+)"
                         r"(?:, ip=(?P<ip>[\w.:-]+))?")
_RAY_MEMORY = re.compile(
    r"Memory on the node \(IP: (?P<ip>[^,)]+)(?:, ID: \w+)?\)"
    r"(?: where the (?:task|lease) \((?:[\w ]+ ID: \w+, )?name=(?P<name>[^,]+), pid=(?P<pid>\d+), "
    r"memory used=(?P<used>[\d.]+ ?[KMGT]?B)\)| where the task)?(?: was running)? was "
    r"(?P<mem>[\d.]+ ?[KMGT]?B / [\d.]+ ?[KMGT]?B) \((?P<frac>\d+(?:\.\d+)?)\), "
    r"which exceeds the memory usage threshold of (?P<thr>\d+(?:\.\d+)?)")
_RAY_VICTIM = re.compile(r"task name=(?P<name>.+?), required resources=\{[^}]*\}, pid=(?P<pid>\d+), "
                         r"actual memory used=(?P<used>[\d.]+ ?[KMGT]?B)")  # Ray >= 2.50's killing policy
_NODE_IP = re.compile(r"\bIP(?: address)?: (?P<ip>[\d.:a-fA-F]+[\da-fA-F])")
_WORKER_PID = re.compile(r"Worker PID: (?P<pid>\d+)")
_FIELD = re.compile(r"(?P<k>class_name|pid|ip): (?P<v>\S+)")
_TORCHRUN_ROOT = "Root Cause (first observed failure):"
_SUMMARY = re.compile(r"(?P<k>host|rank|exitcode|traceback) *: (?P<v>.*)")
_QUOTED_PATH = re.compile(r"""['"](?P<p>(?:/|~/|\$HOME|\$\{HOME\})[^'"]*)['"]""")
_HF_ID = re.compile(r"it looks like (?P<p>\S+) is not the path")
_TORCH_ADVICE = (" If reserved but unallocated", " If reserved memory is >>", " See documentation for Memory")


@dataclass(frozen=True)
class _Found:
    # 0: a first cause; 1: a failure that is often another's consequence (NCCL, an engine's summary);
    # 2: a guess (a SIGKILL: the OOM killer?); 3: an exception that only reports another failure
    tier: int
    pos: float  # where the log shows it (earlier wins within a tier)
    kind: FailureKind
    line: int | None  # index into the lines, None for the exit code alone


def diagnose(tail: str, exit_code: int | None = None) -> Diagnosis | None:
    """What made a task fail, typed, from the tail of its log (pure); None when the tail does not say.

    The first cause wins over its consequences: a rank's CUDA OOM over the NCCL timeouts it then causes
    on the other ranks, vLLM's "KV cache is needed …" over "Engine core initialization failed", SGLang's
    "Not enough memory" over Ray's "killed by SIGKILL by OOM killer?" for the actor it took down.
    """
    lines = _lines(tail)
    runtime = next((ln.text for ln in reversed(lines) if _RUNTIME_DIED.match(ln.text)), None)
    if runtime is not None:  # the launcher saw it die and ended the command: all after is a consequence
        if "SIGKILL" in runtime:  # the kernel's OOM killer may have taken the raylet: a host OOM says more
            rest = diagnose("\n".join(ln for ln in tail.splitlines() if not _RUNTIME_DIED.search(ln)), None)
            if rest is not None and rest.kind == FailureKind.HOST_OOM:
                return rest
        cause = _clip(runtime.removeprefix("[argus] error: "))
        return Diagnosis(FailureKind.TASK_RUNTIME, cause, None, hint_for(FailureKind.TASK_RUNTIME))
    found: list[_Found] = []
    user_frame: dict[tuple[str, str], int] = {}  # per process: the line of its open traceback's innermost user frame
    for i, ln in enumerate(lines):
        if _TRACEBACK in ln.text:
            user_frame.pop(ln.key, None)
        elif ln.indented and (m := _FRAME.match(ln.text)) and _is_user_file(m.group("file")):
            user_frame[ln.key] = i
        if ln.indented or not ln.text or _RAY_HEADER.search(ln.text):
            continue  # frames, source lines, Ray's indented field lists, Ray's wrappers of an inner exception
        t, exc = ln.text, _is_exception(ln)
        if exc and ln.key in user_frame and not _GPU_OOM.search(t):
            found.append(_Found(0, i, FailureKind.USER_CODE, user_frame.pop(ln.key)))
            continue
        if (exc and _GPU_OOM.search(t)) or _GPU_OOM_NCCL.search(t):
            found.append(_Found(0, i, FailureKind.GPU_OOM, i))
        elif _RAY_OOM.search(t):
            found.append(_Found(0, i, FailureKind.HOST_OOM, i))
        elif exc and _ENGINE_ROOT.search(t):
            found.append(_Found(0, i, FailureKind.ROLLOUT_ENGINE, i))
        elif exc and _ENGINE_ACTOR.match(ln.actor) and _exc_name(t).endswith(("Error", "Exception")) \
                and _exc_name(t) not in _FOLLOW_ON:  # raised in the rollout server itself (not its warnings)
            found.append(_Found(0, i, FailureKind.ROLLOUT_ENGINE, i))
        elif _ENGINE_FAILED.search(t):
            found.append(_Found(1, i, FailureKind.ROLLOUT_ENGINE, i))
        elif _NCCL.search(t):
            found.append(_Found(1, i, FailureKind.NCCL_TIMEOUT, i))
        elif _WORKER_KILLED.search(t) or _SHELL_KILLED.fullmatch(t.rstrip()):
            found.append(_Found(2, i, FailureKind.HOST_OOM, i))
        elif t.startswith(_TORCHRUN_ROOT) and _torchrun_root(lines, i).get("signal") == "9":
            found.append(_Found(2, -1, FailureKind.HOST_OOM, i))  # torchrun names the first failure itself
    root = _root_cause(tail)
    if root is not None:
        found.extend(_root_found(lines, *root))
    if exit_code in _SIGKILL_EXITS:
        found.append(_Found(2, float("inf"), FailureKind.HOST_OOM, None))
    if not found:
        return None
    tier = min(f.tier for f in found)
    # tiers 1 and 2 compete by position: a rank SIGKILLed before the others' NCCL timeouts caused them
    pick = min((f for f in found if f.tier == tier or (tier == 1 and f.tier == 2)), key=lambda f: f.pos)
    return _explain(lines, pick, found, exit_code, root)


_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
# installed packages, the standard library, and Argus's own modules that reach a task through ARGUS_SRC
_INSTALLED = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python3\.\d+|argus[/\\](?:jobs|runtime|verl|envs))[/\\]")
_HOME_PART = re.compile(r"^/.*?/users/[^/]+/")


def _is_user_file(path: str) -> bool:
    """A frame of the user's own code: a file in a user's home (``<root>/users/<user>/…``: ``$HOME/code``, a
    script of theirs) that is not inside an installed package (their own environment's site-packages)."""
    return bool(_HOME_PART.match(path)) and not _INSTALLED.search(path)


def _user_code(lines: list[_Line], pick: _Found) -> Diagnosis:
    """The exception a user's frame raised, where (their file as $HOME/…, line, function; the process)."""
    assert pick.line is not None
    frame, raised = _FRAME.match(lines[pick.line].text), int(pick.pos)
    assert frame is not None
    shown = _HOME_PART.sub("$HOME/", frame.group("file"))  # never the data root's real path
    at = f"{frame.group('fn')} ({shown}, line {frame.group('line')})"
    return Diagnosis(FailureKind.USER_CODE, _clip(lines[raised].text), _where(lines, raised, at),
                     hint_for(FailureKind.USER_CODE))


def _root_found(lines: list[_Line], n: int, cause: str) -> list[_Found]:
    """The root exception of the last traceback as a finding (tier 3 when it only reports another failure)."""
    pos = next((i for i, ln in enumerate(lines) if ln.text.strip() and _clip(ln.text) == cause), n)
    name = _exc_name(cause)
    if name in _FOLLOW_ON or _NCCL.search(cause) or _ENGINE_FAILED.search(cause) or _RAY_OOM.search(cause):
        return [_Found(3, pos, FailureKind.PYTHON_EXCEPTION, pos)]  # the scan above read the rest
    if _GPU_OOM.search(cause) or _ENGINE_ROOT.search(cause):
        return []  # the scan above found it, with its position
    kind = (FailureKind.MISSING_FILE if _MISSING.search(cause) else
            FailureKind.PERMISSION if _PERMISSION.search(cause) else FailureKind.PYTHON_EXCEPTION)
    return [_Found(0, pos, kind, pos)]


def _exc_name(line: str) -> str:
    """``ValueError`` of ``ValueError: …``, ``ActorDiedError`` of ``ray.exceptions.RayTaskError(ActorDiedError): …``."""
    name = line.split(":", 1)[0].strip()
    inner = re.search(r"\(([\w.]+)\)$", name)
    return (inner.group(1) if inner else name).rsplit(".", 1)[-1]


def _explain(lines: list[_Line], pick: _Found, found: list[_Found], exit_code: int | None,
             root: tuple[int, str] | None) -> Diagnosis:
    i = pick.line
    if pick.kind == FailureKind.USER_CODE:
        return _user_code(lines, pick)
    if pick.kind == FailureKind.GPU_OOM:
        assert i is not None
        return _gpu_oom(lines, i)
    if pick.kind == FailureKind.HOST_OOM and pick.tier == 0:
        assert i is not None
        return _ray_oom(lines, i)
    if pick.kind == FailureKind.HOST_OOM:
        return _sigkill(lines, i, exit_code)
    if pick.kind == FailureKind.ROLLOUT_ENGINE:
        assert i is not None
        return _engine(lines, i, found)
    if pick.kind == FailureKind.NCCL_TIMEOUT:
        return _nccl(lines, [f.line for f in found if f.kind == FailureKind.NCCL_TIMEOUT and f.line is not None])
    assert i is not None and root is not None
    cause, where = root[1], _where(lines, i)
    if pick.kind in (FailureKind.MISSING_FILE, FailureKind.PERMISSION):
        return Diagnosis(pick.kind, cause, where, _path_hint(pick.kind, cause))
    return Diagnosis(FailureKind.PYTHON_EXCEPTION, cause, where, hint_for(FailureKind.PYTHON_EXCEPTION))


def _block(lines: list[_Line], i: int, limit: int = 400) -> list[_Line]:
    """The lines of line ``i``'s traceback from the same process, up to and including line ``i``."""
    key, out = lines[i].key, []
    for ln in reversed(lines[max(0, i - limit):i + 1]):
        if ln.key != key:
            continue
        out.append(ln)
        if _TRACEBACK in ln.text:  # also vLLM's "… [core.py:708] Traceback …", SGLang's "Scheduler hit …: Traceback …"
            break
    return out[::-1]


def _where(lines: list[_Line], i: int, *extra: str) -> str | None:
    """Which process printed line ``i``: its Ray prefix, else the Ray chain's innermost actor; and its rank."""
    ln, parts = lines[i], []
    if ln.actor and not ln.actor.startswith(("raylet", "autoscaler")):
        parts.append(ln.actor)
    else:
        for b in reversed(_block(lines, i)):
            if m := _RAY_HEADER.search(b.text):
                ip = f", ip={m.group('ip')}" if m.group("ip") else ""
                parts.append(f"{m.group('who').split('.')[0]} pid={m.group('pid')}{ip}")
                break
    parts += [p for p in (ln.rank, ln.tp, *extra) if p]
    return ", ".join(parts) or None


def _gpu_oom(lines: list[_Line], i: int) -> Diagnosis:
    text = lines[i].text.strip()
    gpu = re.search(r"\bGPU (\d+)", text)
    cause = _clip(text[:min([text.find(a) for a in _TORCH_ADVICE if a in text] or [len(text)])])  # not its advice
    where = _where(lines, i, f"GPU {gpu.group(1)}" if gpu else "")
    frames = "\n".join(ln.text for ln in _block(lines, i))
    if re.search(r"[/\\](?:vllm|sglang)[/\\]", frames) or re.match(r"(?:vLLM|SGLang)\w*Server", lines[i].actor):
        hint = _hint("hint.gpu_oom_rollout")
    elif "compute_ref_log_prob" in frames:
        hint = _hint("hint.gpu_oom_ref_log_prob")
    elif "compute_log_prob" in frames:
        hint = _hint("hint.gpu_oom_log_prob")
    elif re.search(r"update_critic|compute_values", frames):
        hint = _hint("hint.gpu_oom_critic")
    elif re.search(r"update_actor|update_policy", frames):
        hint = _hint("hint.gpu_oom_actor")
    elif "sft_trainer" in frames:
        hint = _hint("hint.gpu_oom_sft")
    else:
        hint = hint_for(FailureKind.GPU_OOM)
    return Diagnosis(FailureKind.GPU_OOM, cause, where, hint)


def _ray_oom(lines: list[_Line], i: int) -> Diagnosis:
    """Ray's memory monitor killed a worker: which one, and the node's memory when it did."""
    mem = victim = None
    for ln in lines:
        mem = mem or _RAY_MEMORY.search(ln.text)
        victim = victim or _RAY_VICTIM.search(ln.text)
    hint = hint_for(FailureKind.HOST_OOM)
    if mem is None:
        ip = _NODE_IP.search(lines[i].text)
        return Diagnosis(FailureKind.HOST_OOM, _clip(lines[i].text), f"node {ip.group('ip')}" if ip else None, hint)
    who = mem if mem.group("name") else victim
    if who is not None:
        name = who.group("name").rsplit(":", 1)[-1]  # "kQ3vWdWorkerDict_0:0:WorkerDict.__init__"
        killed = f"{name} (pid={who.group('pid')}, memory used={who.group('used')})"
        where = f"{name.split('.')[0]} pid={who.group('pid')}, ip={mem.group('ip')}"
    else:
        killed, where = "a worker", f"node {mem.group('ip')}"
    cause = (f"Ray's memory monitor killed {killed}: memory on node {mem.group('ip')} was {mem.group('mem')} "
             f"({mem.group('frac')}), over the {mem.group('thr')} threshold")
    return Diagnosis(FailureKind.HOST_OOM, _clip(cause), where, hint)


def _sigkill(lines: list[_Line], i: int | None, exit_code: int | None) -> Diagnosis:
    """A process vanished without a Python error: SIGKILL, most often the kernel's OOM killer."""
    hint = _hint("hint.sigkill")
    if i is None:
        return Diagnosis(FailureKind.HOST_OOM, f"killed by SIGKILL (exit code {exit_code}) with no Python error "
                         "in the log", None, hint)
    text = lines[i].text
    if text.startswith(_TORCHRUN_ROOT):
        s = _torchrun_root(lines, i)
        rank, host, pid = s.get("rank", "?"), s.get("host"), s.get("pid")
        cause = (f"torchrun's first failure: rank {rank}{f' (pid {pid})' if pid else ''} was killed by signal 9 "
                 "(SIGKILL) without a Python error")
        where = ", ".join(p for p in (f"rank{rank}", f"host {host}" if host else "") if p)
        return Diagnosis(FailureKind.HOST_OOM, _clip(cause), where, hint)
    if _SHELL_KILLED.fullmatch(text.rstrip()):
        return Diagnosis(FailureKind.HOST_OOM, _clip(f"the process was killed (SIGKILL) without a Python error: "
                                                     f"{text.strip()}"), _where(lines, i), hint)
    detail = re.search(r"Worker exit detail: (.*?)(?:\.? (?:There are some potential|Some common causes)|$)", text)
    said = detail.group(1).rstrip(".") if detail else text.strip()
    cause = (f"the worker process died without a Python error ({said}); Ray's first suspect is SIGKILL by the "
             "OOM killer")
    return Diagnosis(FailureKind.HOST_OOM, _clip(cause), _dead_worker(lines, i), hint)


def _dead_worker(lines: list[_Line], i: int) -> str | None:
    """The Ray worker that died: ActorDiedError's class_name / pid / ip fields, else the raylet's line."""
    for j, ln in enumerate(lines):
        if "The actor died unexpectedly" not in ln.text:
            continue
        fields = {m.group("k"): m.group("v") for b in lines[j + 1:j + 10] if (m := _FIELD.fullmatch(b.text.strip()))}
        if "pid" in fields:
            cls = fields.get("class_name", "actor").rsplit(".", 1)[-1]
            ip = f", ip={fields['ip']}" if "ip" in fields else ""
            return f"{cls} pid={fields['pid']}{ip}"
    pid, ip = _WORKER_PID.search(lines[i].text), _NODE_IP.search(lines[i].text)
    if pid:
        return f"Ray worker pid={pid.group('pid')}" + (f", ip={ip.group('ip')}" if ip else "")
    return _where(lines, i)


def _torchrun_root(lines: list[_Line], i: int) -> dict[str, str]:
    """torchrun's "Root Cause (first observed failure)" box: host, rank, pid, signal."""
    out: dict[str, str] = {}
    for ln in lines[i + 1:i + 10]:
        m = _SUMMARY.fullmatch(ln.text.strip())
        if not m:
            continue
        k, v = m.group("k"), m.group("v")
        if k == "rank":
            out["rank"] = v.split()[0]
        elif k == "host":
            out["host"] = v
        elif k == "exitcode":
            code = re.match(r"(-?\d+)(?: \(pid: (\d+)\))?", v)
            if code:
                out["pid"] = code.group(2) or ""
                if code.group(1).startswith("-"):
                    out.setdefault("signal", code.group(1)[1:])
        elif k == "traceback" and (sig := re.search(r"Signal (\d+) \(", v)):
            out["signal"] = sig.group(1)
    return out


def _engine(lines: list[_Line], i: int, found: list[_Found]) -> Diagnosis:
    """vLLM / SGLang did not start: its own reason (often printed before the error that reached the driver)."""
    root = next((f.line for f in found if f.tier == 0 and f.kind == FailureKind.ROLLOUT_ENGINE), None)
    if root is None:  # only "Engine core initialization failed" & co.: the engine's exception after its marker
        marks = [f.line for f in found if f.kind == FailureKind.ROLLOUT_ENGINE and f.line is not None]
        root = next((j for m in sorted(marks) if (j := _next_exception(lines, m)) is not None), i)
    text = lines[root].text.strip()
    if "validation error for" in text:  # pydantic: the reason is on a line of its own below
        detail = next((ln.text.strip() for ln in lines[root + 1:root + 6]
                       if ln.key == lines[root].key and "Value error, " in ln.text), None)
        if detail:
            text = f"{text}: {detail.split('Value error, ', 1)[1].split(' [type=', 1)[0]}"
    named = [k for k in _ENGINE_SETTINGS if k in text]
    if named and "validation error for" in text:
        hint = _hint("hint.vllm_config", settings=", ".join(f"actor_rollout_ref.rollout.{k}" for k in named))
    elif re.search(r"KV cache|cache blocks", text):
        hint = _hint("hint.kv_cache")
    elif "less than desired GPU memory utilization" in text:
        hint = _hint("hint.gpu_not_free")
    elif "--mem-fraction-static" in text:
        hint = _hint("hint.sglang_kv_cache")
    elif "tensor parallel size" in text:
        hint = _hint("hint.tensor_parallel")
    else:
        hint = hint_for(FailureKind.ROLLOUT_ENGINE)
    return Diagnosis(FailureKind.ROLLOUT_ENGINE, _clip(text), _where(lines, root), hint)


def _next_exception(lines: list[_Line], i: int, limit: int = 300) -> int | None:
    if _is_exception(lines[i]):
        return i
    key = lines[i].key
    return next((j for j in range(i + 1, min(len(lines), i + limit))
                 if lines[j].key == key and _is_exception(lines[j])), None)


def _nccl(lines: list[_Line], hits: list[int]) -> Diagnosis:
    """An NCCL timeout or abort: which collective, which ranks, how long."""
    dogs = [(j, m) for j in hits if (m := _WATCHDOG.search(lines[j].text))]
    if dogs:
        j, m = dogs[0]
        work = m.group("work")
        op, seq, limit = (re.search(p, work) for p in (r"OpType=(\w+)", r"SeqNum=(\d+)", r"Timeout\(ms\)=(\d+)"))
        ranks = sorted({int(r) for _, d in dogs for r in [d.group("rank")] if r is not None}
                       | {int(lines[k].rank[4:]) for k, _ in dogs if lines[k].rank})
        rank = m.group("rank") or (lines[j].rank[4:] if lines[j].rank else None)
        cause = (f"NCCL watchdog: {op.group(1) if op else 'a collective'}"
                 f"{f' (SeqNum={seq.group(1)})' if seq else ''} ran for {m.group('ran')} ms"
                 f"{f', over the {limit.group(1)} ms timeout' if limit else ''}"
                 f"{', on ranks ' + ', '.join(map(str, ranks)) if len(ranks) > 1 else ''}")
        where = _where(lines, j) if lines[j].rank or rank is None else _where(lines, j, f"rank{rank}")
        hint = hint_for(FailureKind.NCCL_TIMEOUT)
        if len(ranks) > 1:
            waited = {"ranks": ", ".join(map(str, ranks)), "seconds": int(m.group("ran")) // 1000}
            hint = (_hint("hint.nccl_ranks_waited", **waited, op=op.group(1)) if op else
                    _hint("hint.nccl_ranks_waited_collective", **waited))
        return Diagnosis(FailureKind.NCCL_TIMEOUT, _clip(cause), where, hint)
    j = next((j for j in hits if _ABORTED.search(lines[j].text)), None)
    if j is None:
        j = next((j for j in hits if _is_exception(lines[j]) and _exc_name(lines[j].text) == "DistBackendError"),
                 hits[0])
    aborted = _ABORTED.search(lines[j].text)
    extra = f"rank{aborted.group('rank')}" if aborted and not lines[j].rank else ""
    cause = _NCCL_SOURCE.sub(":", lines[j].text.strip())  # "NCCL error in: /pytorch/…/NCCLUtils.hpp:268, "
    after = [ln.text.strip() for ln in lines[j + 1:j + 6] if ln.key == lines[j].key]
    if "Last error:" in after and after.index("Last error:") + 1 < len(after):  # NCCL's own words, e.g. the peer
        cause += f"; last error: {after[after.index('Last error:') + 1]}"
    hint = hint_for(FailureKind.NCCL_TIMEOUT)
    if "network error" in cause:
        peer = re.search(r"from peer ([\w.:-]+?)<", cause)
        hint = _hint("hint.nccl_peer_gone", peer=peer.group(1)) if peer else _hint("hint.nccl_peer_gone_unknown")
    return Diagnosis(FailureKind.NCCL_TIMEOUT, _clip(cause), _where(lines, j, extra), hint)


def _path_hint(kind: FailureKind, cause: str) -> str:
    m = _QUOTED_PATH.search(cause) or _HF_ID.search(cause)
    if m is None:
        return hint_for(kind)
    path = m.group("p")
    return _hint("hint.missing_path" if kind == FailureKind.MISSING_FILE else "hint.permission_path", path=path)


# Ray's account of a dead job supervisor (ray.exceptions.ActorDiedError, prefixed by the job manager):
#   Job supervisor actor died: The actor died unexpectedly before finishing this task.
#   \tclass_name: JobSupervisor / \tactor_id: … / \tpid: … / \tname: … / \tnamespace: … / \tip: 10.0.0.7
#   The actor died because its node has died. Node Id: 5f1b…
#   \tthe actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats
_NODE_ID = re.compile(r"Node Id: ([0-9a-fA-F]+)")
_IP = re.compile(r"^\s*ip: (\S+)\s*$", re.MULTILINE)
_NODE_FATE = re.compile(r"the actor's node was (.+)$", re.MULTILINE)
NODE_ID_SHOWN = 12


def node_lost_message(when: datetime, ray_message: str | None, *, node_id: str | None = None,
                      hostname: str | None = None) -> str:
    """One line for a lost node: which node, when, and Ray's reason (pure).

    ``the driver's node w1 (5f1be0c3a5e0, 10.0.0.7) was lost at 2026-11-23 12:03:04 UTC: terminated
    unexpectedly: health check failed due to missing too many heartbeats``. Ray's message is a
    multi-line dump of the job supervisor actor (class, actor id, pid, namespace…); the full text
    belongs in the task's timeline, not in its status line.
    """
    who, at, reason = node_lost_parts(when, ray_message, node_id=node_id, hostname=hostname)
    line = f"the driver's node {who} was lost" if who else "the driver's node was lost"
    line += f" at {at} UTC"
    return _clip(f"{line}: {reason}" if reason else line)


def node_lost_parts(when: datetime, ray_message: str | None, *, node_id: str | None = None,
                    hostname: str | None = None) -> tuple[str, str, str | None]:
    """What :func:`node_lost_message` says: the node ("" when unknown), the time (UTC) and Ray's reason, so the
    scheduler can store them as a coded message (core/messages.py ``status.node_lost*``)."""
    text = ray_message or ""
    m = _NODE_ID.search(text)
    node = (m.group(1) if m else None) or node_id
    ip = _IP.search(text)
    names = [n for n in (hostname, node[:NODE_ID_SHOWN] if node else None, ip.group(1) if ip else None) if n]
    who = names[0] + (f" ({', '.join(names[1:])})" if names[1:] else "") if names else ""
    return who, when.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S'), _ray_reason(text)


def _ray_reason(text: str) -> str | None:
    """Ray's words for why: the node's fate when Ray gives it, else the first line of its message."""
    fate = _NODE_FATE.search(text)
    if fate:
        return fate.group(1).strip()
    if "because its node has died" in text:
        return "Ray reports its node dead"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.removeprefix("Job supervisor actor died:").strip() or None

"""Which ``VAR=value`` assignments an advanced command may put in front of ``python3``.

An assignment changes the environment of the training process, so it can undo what
the platform set up: ``CUDA_VISIBLE_DEVICES`` would reach GPUs Ray gave another task,
``LD_PRELOAD`` / ``PATH`` / ``PYTHONHOME`` / ``PYTHONPATH`` change what code runs,
``HOME`` moves where ``~`` points. So assignments are an allowlist
(``settings.env_allowlist``), each entry one of:

* ``NAME`` — exactly this variable, any value;
* ``PREFIX_*`` — every variable starting with ``PREFIX_`` (``NCCL_*``, ``VLLM_*``);
* ``NAME=a|b`` — this variable with one of the listed values only (``WANDB_MODE=offline|disabled``:
  the other modes upload to a service).

The default is what verl's own example scripts set in front of their commands that only
tunes the run (logging, NCCL/vLLM/SGLang/TransformerEngine knobs, thread counts, offline
switches). ``GPU_VISIBILITY`` variables are refused even when an admin lists them: Ray
sets them from the GPUs it gives the task. Values are paths like any other word of the
command: admission's path checks apply to them.
"""

from __future__ import annotations

from argus.core.messages import field_error, part
from argus.errors import FieldError

DEFAULT_ENV_ALLOWLIST = (
    "PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONFAULTHANDLER", "PYTHONDONTWRITEBYTECODE",
    "HYDRA_FULL_ERROR", "TOKENIZERS_PARALLELISM", "WANDB_MODE=offline|disabled",
    "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE",
    "RAY_DEDUP_LOGS", "RAY_LOGGING_LEVEL",
    "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_LAUNCH_BLOCKING", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "PYTORCH_CUDA_ALLOC_CONF", "TORCH_NCCL_*", "TORCH_DISTRIBUTED_DEBUG",
    "NCCL_*", "VLLM_*", "SGLANG_*", "NVTE_*", "VERL_*",
)
GPU_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                  "ROCR_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")
# Why well-known variables outside the allowlist are refused, beyond "not on the list" (core.messages part.env_*).
_WHY = {
    **{name: "part.env_platform" for name in  # the platform sets it for python3 and the training environment
       ("PATH", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
        "VIRTUAL_ENV")},
    **{name: "part.env_native" for name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT")},
    "HOME": "part.env_home",
    "RAY_ADDRESS": "part.env_ray",
}


def env_allowed(name: str, value: str, allowlist: tuple[str, ...] | list[str]) -> tuple[bool, str | None]:
    """(allowed, the values allowed when only the value is wrong)."""
    for entry in allowlist:
        pattern, eq, values = entry.partition("=")
        matches = name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern
        if not matches:
            continue
        if not eq or value in values.split("|"):
            return True, None
        return False, values.replace("|", ", ")
    return False, None


def check_env_assignments(env: dict[str, str], allowlist: tuple[str, ...] | list[str],
                          errors: list[FieldError], *, fld: str = "command") -> None:
    """A 400 per assignment that is not allowed, naming the variable and the fix."""
    for name, value in env.items():
        if name in GPU_VISIBILITY:
            errors.append(field_error(fld, f"{name}={value}", "command.env_gpu_visibility", name=name))
            continue
        ok, values = env_allowed(name, value, allowlist)
        if ok:
            continue
        if values is not None:
            errors.append(field_error(fld, f"{name}={value}", "command.env_values", name=name, values=values))
            continue
        allowed = ", ".join(allowlist)
        errors.append(field_error(fld, f"{name}={value}", "command.env_not_allowed_why", name=name,
                                  why=part(_WHY[name]), allowed=allowed) if name in _WHY else
                      field_error(fld, f"{name}={value}", "command.env_not_allowed", name=name, allowed=allowed))


# The node's variables that reach a task's sandbox and the platform's own ``ray start`` (issue 21):
# locale and time zone, where the native GPU stack lives, how NCCL/Gloo find the network, proxies and
# CA bundles for outbound HTTPS. Everything else — ARGUS_* (the admin token), RAY_* (the platform's
# auth), database URLs, cloud credentials — stays out. Entries as in ``env_allowlist``: NAME or PREFIX*.
NODE_ENV_KEEP = (
    "PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "TERM",
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_DEVICE_ORDER", "NVIDIA_DRIVER_CAPABILITIES",
    "NCCL_*", "GLOO_*", "UCX_*",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    # the site's package index and wheel folders: a user's own environment (argus.jobs.build_env) installs
    # from where the cluster does (put no credentials in these URLs: tasks can read them)
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS", "UV_DEFAULT_INDEX", "UV_INDEX",
)


def env_kept(name: str, keep: tuple[str, ...] | list[str]) -> bool:
    """Whether ``name`` is on a keep list of NAME and PREFIX* entries."""
    return any(name.startswith(k[:-1]) if k.endswith("*") else name == k for k in keep)

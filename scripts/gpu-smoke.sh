#!/usr/bin/env bash
# GPU smoke test in one command: Argus end to end on this machine's GPUs, offline.
#
#   scripts/gpu-smoke.sh [run] [--cpu] [--gpus N] [WHEELHOUSE]
#       tiny offline model + data, `argus up --gpus N` (own state dir and ports), a user, uploads,
#       the doctor job, GPU isolation (a task with CUDA_VISIBLE_DEVICES unset sees only its own GPUs
#       in torch and nvidia-smi; NCCL between its own processes when it has ≥ 2), a basic SFT task and (with vLLM or SGLang installed) a basic GRPO task for
#       2 steps; checks status, CUDA_VISIBLE_DEVICES and every metrics step; a PASS/FAIL/SKIPPED
#       table; exit 1 on any FAIL. WHEELHOUSE: install it first (as `install`).
#       --cpu (automatic when nvidia-smi finds no GPU): logical GPUs (--gpus 1); the SFT/GRPO specs
#       are submitted, accepted and validated, then canceled; the GPU steps are SKIPPED.
#   scripts/gpu-smoke.sh pack DIR [PRESENT.txt]
#       on a connected machine: a wheelhouse (cp312, manylinux x86_64) of what a Python 3.12 +
#       CUDA torch machine lacks to run Argus, at most 64 MiB. PRESENT.txt: `pip freeze` (or one
#       name per line) of that machine; default: what the torch 2.11 wheel itself pulls in.
#   scripts/gpu-smoke.sh install DIR
#       pip install --no-index --no-deps DIR/*.whl into $PY's own environment (not --target:
#       Argus sets PYTHONPATH for tasks, so packages must live in site-packages).
#
# Training environment (issue 22): TRAIN_ENV=<catalog entry> (e.g. verl-0.9.1-vllm) builds it from its lock
# with `argus env build` (from the index, or offline from ENV_WHEELHOUSE made by `argus env wheelhouse`) and
# makes it the default environment, so the SFT/GRPO tasks run in it; TRAIN_PYTHON=<interpreter> (a venv built
# elsewhere) becomes the built-in environment's interpreter instead (ARGUS_TRAIN_PYTHON, ARGUS_VERL_PYTHON). Unset: tasks run in Argus's own interpreter ($PY), as before.
# Knobs: OUT (logs, results; default /tmp/argus-gpu-smoke), PY (interpreter; default .venv/bin/python
# when present, else python3), PORT (API, default 18480), RAY_PORT (+1, +2; default 26380),
# SFT_TIMEOUT / GRPO_TIMEOUT (seconds, default 600 / 900).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
if [[ -z "${PY:-}" ]]; then
  if [[ -x "$root/.venv/bin/python" ]]; then PY="$root/.venv/bin/python"; else PY=python3; fi
fi

install_wheelhouse() {  # DIR
  local dir=$1
  ls "$dir"/*.whl >/dev/null 2>&1 || { echo "no wheels in $dir" >&2; return 1; }
  echo "installing $(ls "$dir"/*.whl | wc -l) wheels from $dir into $("$PY" -c 'import sys; print(sys.prefix)')"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$dir"/*.whl
}

mode=run
case "${1:-}" in
  pack) shift; [[ $# -ge 1 ]] || { echo "usage: $0 pack DIR [PRESENT.txt]" >&2; exit 64; }
        exec "$PY" "$here/smoke_pack.py" --root "$root" "$@" ;;
  install) shift; [[ $# -eq 1 ]] || { echo "usage: $0 install DIR" >&2; exit 64; }
           install_wheelhouse "$1"; exit $? ;;
  run) shift ;;
  -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
esac

cpu=""; gpus=""; wheels=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --cpu) cpu=1 ;;
    --gpus) gpus=$2; shift ;;
    -*) echo "unknown option $1" >&2; exit 64 ;;
    *) wheels=$1 ;;
  esac
  shift
done

OUT=${OUT:-/tmp/argus-gpu-smoke}
PORT=${PORT:-18480}
RAY_PORT=${RAY_PORT:-26380}   # outside Ray's worker port range 10002-19999
state="$OUT/state"; logs="$OUT/logs"; results="$OUT/results.tsv"
rm -rf "$state" "$logs" "$results"; mkdir -p "$logs"
exec > >(tee "$OUT/smoke.log") 2>&1
T0=$(date +%s)
step() { echo; echo "=== [+$(( $(date +%s) - T0 ))s] $*"; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >> "$results"; echo "$1: $2 ${3:-}"; }
check() { "$PY" "$here/smoke_check.py" "$@"; }
argus() { "$PY" -m argus.cli.main "$@"; }

if [[ -n "$wheels" ]]; then
  step "install the wheelhouse $wheels"
  install_wheelhouse "$wheels" && record PASS "install wheelhouse" "$wheels" || { record FAIL "install wheelhouse" "$wheels"; }
fi

step "machine"
"$PY" - <<'PY'
import importlib.metadata as md, platform, sys
print("python", platform.python_version(), sys.executable)
for d in ("argus", "torch", "verl", "ray", "transformers", "vllm", "sglang", "flash-attn"):
    try:
        print(f"{d:14}", md.version(d))
    except md.PackageNotFoundError:
        print(f"{d:14}", "absent")
PY
ngpu=0
if [[ -z "$cpu" ]] && command -v nvidia-smi >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  nvidia-smi > "$logs/nvidia-smi.txt" 2>&1
fi
if [[ $ngpu -eq 0 ]]; then
  cpu=1; gpus=${gpus:-1}
  echo "no GPU used (--cpu or no nvidia-smi GPU): the local worker advertises $gpus logical GPU(s)"
else
  gpus=${gpus:-$ngpu}
  echo "$ngpu GPU(s) here; argus up --gpus $gpus"
fi
command -v bwrap >/dev/null && echo "bubblewrap: $(command -v bwrap) (tasks run jailed)" \
  || echo "bubblewrap: absent (TASK_JAIL=auto runs tasks unconfined)"
TPY=$PY  # the interpreter tasks run in: Argus's own unless a training environment is built or registered
if [[ -n "${TRAIN_ENV:-}" ]]; then
  step "training environment $TRAIN_ENV (argus env build)"
  if argus env build "$TRAIN_ENV" --state-dir "$state" ${ENV_WHEELHOUSE:+--wheelhouse "$ENV_WHEELHOUSE"} \
      > "$logs/env-build.log" 2>&1; then
    TPY="$state/private/envs/$TRAIN_ENV/venv/bin/python"
    export ARGUS_DEFAULT_ENV=$TRAIN_ENV
    record PASS "env build $TRAIN_ENV" "$(tail -2 "$logs/env-build.log" | tr '\n' ' ')"
  else
    tail -20 "$logs/env-build.log"; record FAIL "env build $TRAIN_ENV" "see logs/env-build.log"
  fi
elif [[ -n "${TRAIN_PYTHON:-}" ]]; then
  TPY=$TRAIN_PYTHON
  export ARGUS_TRAIN_PYTHON=$TRAIN_PYTHON ARGUS_VERL_PYTHON=$TRAIN_PYTHON
fi
engine=$("$TPY" -c 'import importlib.util as u; print(next((e for e in ("vllm", "sglang") if u.find_spec(e)), ""))')
echo "rollout engine: ${engine:-none} (in $TPY)"

step "tiny model and datasets (offline)"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if "$PY" "$here/smoke_tiny.py" "$OUT/tiny" > "$logs/tiny.log" 2>&1; then
  record PASS "tiny model + data" "$(grep -E '^(tiny model|verl )' "$logs/tiny.log" | tr '\n' ';')"
else
  tail -20 "$logs/tiny.log"; record FAIL "tiny model + data" "see logs/tiny.log"
fi

step "argus up --gpus $gpus"
export ARGUS_URL="http://127.0.0.1:$PORT" ARGUS_ADMIN_TOKEN=${ARGUS_ADMIN_TOKEN:-gpu-smoke-admin-token-0123456789}
export ARGUS_SFTP_ENABLED=false ARGUS_VERL_VALIDATION=required ARGUS_RAY_HEAD_PORT=$RAY_PORT \
  ARGUS_RAY_DASHBOARD_PORT=$((RAY_PORT + 1)) ARGUS_RAY_CLIENT_SERVER_PORT=$((RAY_PORT + 2))
setsid "$PY" -m argus.cli.main up --gpus "$gpus" --state-dir "$state" --port "$PORT" --sftp-port $((PORT + 1)) \
  > "$logs/argus-up.log" 2>&1 &
UP=$!
stop_argus() {
  [[ -n "${UP:-}" ]] || return 0
  kill -TERM -- "-$UP" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$UP" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$UP" 2>/dev/null; UP=""
}
trap 'stop_argus' EXIT
trap 'exit 130' INT TERM
export ARGUS_TOKEN=$ARGUS_ADMIN_TOKEN
if check health 180 --pid "$UP" && check nodes "$gpus" 120; then
  record PASS "argus up --gpus $gpus" "$ARGUS_URL"
else
  tail -40 "$logs/argus-up.log"; record FAIL "argus up --gpus $gpus" "see logs/argus-up.log"
  "$PY" "$here/smoke_check.py" summary "$results"; exit 1
fi
argus nodes

step "user alice, uploads"
tok=$(argus user create alice | sed -n 's/^token: //p')
export ARGUS_TOKEN=$tok
up_ok=PASS
for f in "$OUT"/tiny/model/*; do argus files put "$f" /models/tiny/ >/dev/null || up_ok=FAIL; done
for d in sft gsm8k; do for f in "$OUT/tiny/$d"/*.parquet; do argus files put "$f" "/datasets/$d/" >/dev/null || up_ok=FAIL; done; done
record "$up_ok" "user + argus files put" "$(argus files ls /models/tiny 2>&1 | wc -l) model files, 4 parquet files"

mkdir -p "$OUT/specs"
cat > "$OUT/specs/sft.yaml" <<'Y'
workload: sft
name: smoke sft
model_id: $HOME/models/tiny
train_file: $HOME/datasets/sft/train.parquet
val_file: $HOME/datasets/sft/val.parquet
nnodes: 1
n_gpus_per_node: 1
total_epochs: 1
lr: 1e-4
max_prompt_length: 128
max_response_length: 128
Y
cat > "$OUT/specs/grpo.yaml" <<Y
workload: grpo
name: smoke grpo
model_id: \$HOME/models/tiny
train_file: \$HOME/datasets/gsm8k/train.parquet
val_file: \$HOME/datasets/gsm8k/test.parquet
nnodes: 1
n_gpus_per_node: 1
total_epochs: 1
total_training_steps: 2
rollout_name: ${engine:-vllm}
max_prompt_length: 256
max_response_length: 64
Y
sed -i "s/^n_gpus_per_node: 1/n_gpus_per_node: $gpus/" "$OUT/specs/sft.yaml" "$OUT/specs/grpo.yaml"
cp "$OUT"/specs/*.yaml "$logs/"

submit() {  # NAME SPEC -> task id on stdout; the CLI's output in logs
  argus submit "$2" > "$logs/submit-$1.txt" 2>&1
  sed -n 's/^accepted \([^ ]*\).*/\1/p' "$logs/submit-$1.txt"
}
save_task() {  # NAME ID: everything about the task, for the logs folder
  { argus task "$2"; echo; argus events "$2"; echo; argus spec "$2"; echo "--- metrics"; argus metrics "$2"
    echo "--- status.json"; argus files get "/jobs/$2/status.json" - ; echo "--- log"; argus logs "$2"; } \
    > "$logs/task-$1.txt" 2>&1
}

step "doctor job"
doc=$(submit doctor "$root/examples/doctor.yaml")
if [[ -n "$doc" ]] && check wait "$doc" 300; then
  record PASS "doctor job" "$doc SUCCEEDED; $(argus logs "$doc" 2>/dev/null | grep -cE '^(OK|WARN)') OK/WARN lines"
else
  record FAIL "doctor job" "${doc:-rejected}: $(argus logs "$doc" 2>/dev/null | grep -E '^FAIL' | head -3 | tr '\n' ';')"
fi
[[ -n "$doc" ]] && save_task doctor "$doc"

step "GPU isolation in the task sandbox"
cat > "$OUT/specs/gpus.yaml" <<Y
kind: advanced
workload: job
name: smoke gpu isolation
nnodes: 1
n_gpus_per_node: $gpus
command: python3 -m argus.jobs.gpus --unset-visible --nccl
Y
iso=$(submit gpus "$OUT/specs/gpus.yaml")
if [[ -n "$iso" ]] && check wait "$iso" 300; then
  out=$(argus logs "$iso" 2>/dev/null)
  seen_torch=$(sed -n 's/^gpus: torch sees \([0-9]*\).*/\1/p' <<<"$out")
  seen_smi=$(sed -n 's/^gpus: nvidia-smi -L lists \([0-9]*\).*/\1/p' <<<"$out")
  nccl=$(sed -n 's/^gpus: nccl \(.*\)/\1/p' <<<"$out")
  if [[ -n "$cpu" ]]; then
    record SKIPPED "GPU isolation" "no GPU on this machine ($iso SUCCEEDED)"
  elif [[ "$seen_torch" == "$gpus" && ( -z "$seen_smi" || "$seen_smi" == "$gpus" ) && "$nccl" != *FAILED* ]]; then
    record PASS "GPU isolation" "CUDA_VISIBLE_DEVICES unset: torch sees $seen_torch, nvidia-smi ${seen_smi:-n/a} of $(nvidia-smi -L | grep -c '^GPU ') GPUs; nccl $nccl"
  else
    record FAIL "GPU isolation" "torch sees ${seen_torch:-?}, nvidia-smi ${seen_smi:-?} (want $gpus); nccl ${nccl:-?}"
  fi
else
  record FAIL "GPU isolation" "${iso:-rejected}: $(argus logs "$iso" 2>/dev/null | tail -3 | tr '\n' ';')"
fi
[[ -n "$iso" ]] && save_task gpus "$iso"

for name in sft grpo; do
  step "basic $name: submit"
  id=$(submit "$name" "$OUT/specs/$name.yaml")
  cat "$logs/submit-$name.txt"
  if [[ -z "$id" ]]; then record FAIL "$name accepted + validated" "$(head -5 "$logs/submit-$name.txt" | tr '\n' ' ')"; continue; fi
  record PASS "$name accepted + validated" "$id; $(grep -iE 'rows|warning' "$logs/submit-$name.txt" | head -3 | tr -s ' ' | tr '\n' ';')"
  if [[ -n "$cpu" ]]; then
    argus cancel "$id" >/dev/null; check wait "$id" 120 >/dev/null
    st=$(argus task "$id" 2>/dev/null | grep -oE 'CANCELED|SUCCEEDED|FAILED' | head -1)
    record "$([[ $st == CANCELED ]] && echo PASS || echo FAIL)" "$name canceled (no GPU)" "${st:-?}"
    record SKIPPED "$name on GPU" "no GPU on this machine"
    save_task "$name" "$id"; continue
  fi
  if [[ $name == grpo && -z "$engine" ]]; then
    argus cancel "$id" >/dev/null
    record SKIPPED "grpo on GPU" "neither vLLM nor SGLang is installed"; save_task "$name" "$id"; continue
  fi
  step "basic $name: run on $gpus GPU(s)"
  timeout_s=$([[ $name == sft ]] && echo "${SFT_TIMEOUT:-600}" || echo "${GRPO_TIMEOUT:-900}")
  check wait "$id" "$timeout_s"; rc=$?
  [[ $rc == 2 ]] && { argus cancel "$id" >/dev/null; sleep 5; }
  args=(--gpus "$gpus"); [[ $name == sft ]] && args+=(--driver-holds-gpus); [[ $name == grpo ]] && args+=(--steps 2)
  check verify "$id" "${args[@]}" | while IFS=$'\t' read -r res what detail; do
    record "$res" "$name: $what" "$detail"
  done
  save_task "$name" "$id"
  grep -nE 'Error|Traceback|attention|step:' "$logs/task-$name.txt" | head -15
done

step "collect logs"
argus tasks > "$logs/tasks.txt" 2>&1
stop_argus
cp -r "$state/private/users/alice/jobs" "$logs/jobs" 2>/dev/null
find "$state" -path '*session_latest/logs/*' \( -name 'job-driver-*' -o -name 'raylet.err' -o -name 'gcs_server.err' \) \
  -size -8M -exec cp {} "$logs/" \; 2>/dev/null
echo "logs: $logs"

step "summary ($(( $(date +%s) - T0 )) s)"
check summary "$results"

#!/usr/bin/env bash
# GPU smoke test in one command: Argus end to end on this machine's GPUs, offline.
#
#   scripts/gpu-smoke.sh [run] [--cpu] [--gpus N] [WHEELHOUSE]
#       tiny offline model + data, `argus up --gpus N` (own state dir and ports), a user, uploads (with
#       a reward of its own in $HOME/code), the doctor job, GPU isolation (a task with CUDA_VISIBLE_DEVICES
#       unset sees only its own GPUs in torch and nvidia-smi; NCCL between its own processes when it has
#       ≥ 2), a basic SFT task (under torchrun, a loss every step) and, with vLLM or SGLang installed, the
#       RL acceptance of tests/e2e/test_rl_cpu_on_ray.py on GPUs (device: gpu, no CPU platform): a basic
#       GRPO task with the user's reward for 4 steps, save_freq 2 (its marker in the log, critic/score/mean
#       only that reward gives, kl_loss > 0, the rollout following the actor, checkpoints 2 and 4), resumed
#       from global_step_2 (the resume check's event, steps 3-4) and exported from global_step_4
#       (transformers loads $HOME/models/smoke-grpo and generates), and PPO with a critic as an advanced
#       command for 3 steps (critic/vf_loss, critic/values/mean, actor/pg_loss each step). Checks status,
#       CUDA_VISIBLE_DEVICES, GPU telemetry and every metrics step of each run; a PASS/FAIL/SKIPPED
#       table, one row a check (SKIPPED says why: no GPU, no rollout engine); exit 1 on any FAIL.
#       WHEELHOUSE: install it first (as `install`).
#       --cpu (automatic when nvidia-smi finds no GPU): logical GPUs (--gpus 1); the SFT/GRPO/PPO specs
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
# SFT_TIMEOUT / GRPO_TIMEOUT / PPO_TIMEOUT / EXPORT_TIMEOUT (seconds a run, default 600 / 900 / 900 / 600).
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
  -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
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
row() {  # NAME CMD…: CMD prints one "PASS|FAIL<TAB>detail" line (smoke_check.py's RL checks): the row NAME;
  local name=$1 out; shift  # with $skip set (a reason), the row is SKIPPED and CMD does not run
  if [[ -n "${skip:-}" ]]; then record SKIPPED "$name" "$skip"; return; fi
  out=$("$@" 2>>"$logs/checks.txt" | tail -1)
  [[ $out == PASS$'\t'* || $out == FAIL$'\t'* ]] || out="FAIL"$'\t'"${out:-no answer from $1 $2: see logs/checks.txt}"
  record "${out%%$'\t'*}" "$name" "${out#*$'\t'}"
}
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
# The user's own reward (tests/e2e/test_rl_cpu_on_ray.py's): LOW or HIGH by the response's length, values verl's
# rewards never give (GSM8K's: 0 or 1), different within a group so GRPO has advantages; its marker proves the call.
LOW=0.25 HIGH=0.75 MARKER=alice-reward-was-called EXPORT=smoke-grpo
mkdir -p "$OUT/specs"
cat > "$OUT/specs/reward.py" <<Y
"""The smoke user's own reward: $LOW or $HIGH by the response's length (scripts/gpu-smoke.sh)."""


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    print("$MARKER", flush=True)
    return $LOW if len(solution_str) % 2 else $HIGH
Y
argus files put "$OUT/specs/reward.py" /code/ >/dev/null || up_ok=FAIL
record "$up_ok" "user + argus files put" "$(argus files ls /models/tiny 2>&1 | wc -l) model files, 4 parquet files, \$HOME/code/reward.py"

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
# examples/grpo-cpu.yaml on GPUs: no device: cpu, env: or CPU overrides; 4 prompts a GPU-multiple a step
# (64 rows: ≥ 4 steps in the epoch), checkpoints at steps 2 and 4 for the resume and the export.
cat > "$OUT/specs/grpo.yaml" <<Y
workload: grpo
name: smoke grpo with the user's reward
device: gpu
model_id: \$HOME/models/tiny
train_file: \$HOME/datasets/gsm8k/train.parquet
val_file: \$HOME/datasets/gsm8k/test.parquet
nnodes: 1
n_gpus_per_node: 1
total_epochs: 1
total_training_steps: 4
save_freq: 2
test_freq: -1
train_batch_size: $(( (4 + gpus - 1) / gpus * gpus ))
rollout_n: 4
rollout_name: ${engine:-vllm}
max_prompt_length: 256
max_response_length: 64
lr: 1e-3
reward_path: \$HOME/code/reward.py
Y
# examples/ppo-cpu.yaml on one GPU: without device: cpu, env: and what core.builders.cpu_training_overrides
# adds for CPU (trainer.device=cpu, fsdp2, eager vLLM without sleep mode, its context and bucket sizes, one
# agent and reward worker); TransferQueue as the GPU template sets it (2 storage units a node).
cat > "$OUT/specs/ppo.yaml" <<Y
kind: advanced
workload: ppo
name: smoke ppo with a critic
device: gpu
nnodes: 1
n_gpus_per_node: 1
command: |
  python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=gae \\
    data.train_files=\$HOME/datasets/gsm8k/train.parquet \\
    data.val_files=\$HOME/datasets/gsm8k/test.parquet \\
    data.train_batch_size=8 \\
    data.max_prompt_length=128 \\
    data.max_response_length=32 \\
    actor_rollout_ref.model.path=\$HOME/models/tiny \\
    actor_rollout_ref.actor.optim.lr=1e-3 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=8 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.rollout.name=${engine:-vllm} \\
    actor_rollout_ref.rollout.n=1 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \\
    critic.model.path=\$HOME/models/tiny \\
    critic.optim.lr=1e-3 \\
    critic.ppo_mini_batch_size=8 \\
    critic.ppo_micro_batch_size_per_gpu=8 \\
    +transfer_queue.backend.SimpleStorage.required_node_resource=worker_node \\
    transfer_queue.backend.SimpleStorage.num_data_storage_units=2 \\
    trainer.nnodes=1 \\
    trainer.n_gpus_per_node=1 \\
    trainer.total_training_steps=3 \\
    trainer.save_freq=-1 \\
    trainer.test_freq=-1 \\
    trainer.val_before_train=False \\
    trainer.logger=[console]
Y
sed -i "s/^n_gpus_per_node: 1/n_gpus_per_node: $gpus/" "$OUT/specs/sft.yaml" "$OUT/specs/grpo.yaml"
cp "$OUT"/specs/* "$logs/"

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

finish() {  # NAME ID TIMEOUT: wait for a task (cancel it past TIMEOUT), keep its record; status 0 once SUCCEEDED
  local rc
  [[ -n "$2" ]] || return 1
  check wait "$2" "$3"; rc=$?
  [[ $rc == 2 ]] && { argus cancel "$2" >/dev/null; sleep 5; }
  save_task "$1" "$2"
  return "$rc"
}

# The acceptance of tests/e2e/test_rl_cpu_on_ray.py beyond a run's status and steps, on this machine's GPUs: one
# row a check. ID [WHY]: with WHY (no GPU, no rollout engine) each row is SKIPPED with it and nothing runs.
sft_acceptance() {
  local skip=${2:-}
  row "sft: under torchrun, a loss every step" check torchrun "$1"
}

grpo_acceptance() {
  local id=$1 skip=${2:-} rid="" xid="" done_x=1
  row "grpo: the user's reward ran (marker in the log)" check marker "$id" "$MARKER"
  row "grpo: critic/score/mean is that reward's" check reward "$id" "$LOW" "$HIGH" --steps 4
  row "grpo: actor trained, rollout followed it" check moved "$id"
  row "grpo: checkpoints global_step_2, 4" check checkpoints "$id" 2 4
  if [[ -z "$skip" ]]; then
    step "grpo: resume from global_step_2 and export global_step_4 (POST /resume, /export; they run side by side)"
    rid=$(check resume "$id" 2 2>"$logs/post-resume.txt"); xid=$(check export "$id" 4 "$EXPORT" 2>"$logs/post-export.txt")
    echo "resume: ${rid:-refused} export: ${xid:-refused}"
    finish grpo-resumed "$rid" "${GRPO_TIMEOUT:-900}"
    finish grpo-export "$xid" "${EXPORT_TIMEOUT:-600}"; done_x=$?
  fi
  if [[ -n "$rid$skip" ]]; then
    row "grpo: resumed from global_step_2" check resumed "$rid" 2 4
  else
    row "grpo: resumed from global_step_2" printf 'FAIL\tPOST /resume refused: %s\n' "$(tr '\n' ' ' < "$logs/post-resume.txt")"
  fi
  if [[ -n "$skip" || $done_x == 0 ]]; then
    row "grpo: exported, transformers generates" check generate "$state/private/users/alice/models/$EXPORT"
  elif [[ -z "$xid" ]]; then
    row "grpo: exported, transformers generates" printf 'FAIL\tPOST /export refused: %s\n' "$(tr '\n' ' ' < "$logs/post-export.txt")"
  else
    row "grpo: exported, transformers generates" printf 'FAIL\texport task %s: %s\n' "$xid" \
      "$(argus task "$xid" 2>/dev/null | grep -E 'CANCELED|FAILED|RUNNING|QUEUED' | head -2 | tr '\n' ' ')"
  fi
}

ppo_acceptance() {
  local skip=${2:-}
  row "ppo: critic metrics every step" check steps "$1" 1 3 critic/vf_loss critic/values/mean actor/pg_loss
}

for name in sft grpo ppo; do
  step "$name: submit"
  id=$(submit "$name" "$OUT/specs/$name.yaml")
  cat "$logs/submit-$name.txt"
  if [[ -z "$id" ]]; then
    record FAIL "$name accepted + validated" "$(head -5 "$logs/submit-$name.txt" | tr '\n' ' ')"
    "${name}_acceptance" "" "the $name spec was refused"; continue
  fi
  record PASS "$name accepted + validated" "$id; $(grep -iE 'rows|warning' "$logs/submit-$name.txt" | head -3 | tr -s ' ' | tr '\n' ';')"
  if [[ -n "$cpu" ]]; then
    argus cancel "$id" >/dev/null; check wait "$id" 120 >/dev/null
    st=$(argus task "$id" 2>/dev/null | grep -oE 'CANCELED|SUCCEEDED|FAILED' | head -1)
    record "$([[ $st == CANCELED ]] && echo PASS || echo FAIL)" "$name canceled (no GPU)" "${st:-?}"
    record SKIPPED "$name on GPU" "no GPU on this machine"
    "${name}_acceptance" "$id" "no GPU on this machine"
    save_task "$name" "$id"; continue
  fi
  if [[ $name != sft && -z "$engine" ]]; then
    argus cancel "$id" >/dev/null
    record SKIPPED "$name on GPU" "neither vLLM nor SGLang is installed"
    "${name}_acceptance" "$id" "neither vLLM nor SGLang is installed"
    save_task "$name" "$id"; continue
  fi
  case $name in  # the PPO task holds one GPU whatever the machine has (its batch sizes are written for one)
    sft) use=$gpus; timeout_s=${SFT_TIMEOUT:-600}; args=(--driver-holds-gpus) ;;
    grpo) use=$gpus; timeout_s=${GRPO_TIMEOUT:-900}; args=(--steps 4) ;;
    ppo) use=1; timeout_s=${PPO_TIMEOUT:-900}; args=(--steps 3) ;;
  esac
  step "$name: run on $use GPU(s)"
  finish "$name" "$id" "$timeout_s"
  check verify "$id" --gpus "$use" "${args[@]}" | while IFS=$'\t' read -r res what detail; do
    record "$res" "$name: $what" "$detail"
  done
  grep -nE 'Error|Traceback|attention|step:' "$logs/task-$name.txt" | head -15
  "${name}_acceptance" "$id"
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

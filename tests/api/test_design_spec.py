"""The founding design's own Advanced spec (seed 000 §2.2), verbatim with its comments, is accepted (issue 23 §1).

The design's schema has no ``workload``: it is inferred from the command (verl's PPO entry →
ppo, or grpo with ``algorithm.adv_estimator=grpo``; verl's SFT entries → sft; anything else →
job), the answer says so, and an explicit one still wins.
"""

from __future__ import annotations

import pytest

from argus.core.command import infer_workload
from tests.helpers import post_spec

# seed 000 §2.2, as written there (the comments are the design's, in Chinese)
DESIGN_ADVANCED = """\
kind: advanced

# 资源(平台调度与预检查用;仍需要)
nnodes: 2
n_gpus_per_node: 4

# 自定义命令(用户负责写对 VERL 的参数/路径)
# 平台会对 $HOME 做宏替换;其余保持原样
command: |
  PYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/datasets/gsm8k/train.parquet \\
    data.val_files=$HOME/datasets/gsm8k/test.parquet \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    trainer.nnodes=2 \\
    trainer.n_gpus_per_node=4 \\
    trainer.total_epochs=1 \\
    trainer.save_freq=10 \\
    +ray_kwargs.ray_init.address=auto
"""


def test_the_design_example_is_accepted_with_its_workload_inferred(live):
    alice = live.new_user("alice")
    r = post_spec(alice, DESIGN_ADVANCED)
    assert r.status_code == 201, r.text
    tid = r.json()["task_id"]
    assert tid.startswith("ppo-")
    assert any("workload: ppo, inferred from the command (verl.trainer.main_ppo)" in w for w in r.json()["warnings"])
    assert alice.get(f"/api/v2/tasks/{tid}").json()["workload"] == "ppo"
    grpo = DESIGN_ADVANCED.replace("trainer.save_freq=10 \\", "trainer.save_freq=10 algorithm.adv_estimator=grpo \\")
    assert post_spec(alice, grpo).json()["task_id"].startswith("grpo-")
    explicit = DESIGN_ADVANCED.replace("kind: advanced\n", "kind: advanced\nworkload: grpo\n")
    r = post_spec(alice, explicit)
    assert r.json()["task_id"].startswith("grpo-") and not any("inferred" in w for w in r.json()["warnings"])
    r = post_spec(alice, DESIGN_ADVANCED.replace("kind: advanced\n", "kind: advanced\nworkload: null\n"))
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "workload"


@pytest.mark.parametrize(("command", "workload"), [
    ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo", "grpo"),
    ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator='grpo'", "grpo"),
    ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=rloo", "ppo"),
    ("torchrun --nproc_per_node=8 -m verl.trainer.sft_trainer model.path=x", "sft"),
    ("torchrun --standalone --nnodes=1 -m verl.trainer.fsdp_sft_trainer", "sft"),
    ("python3 -m argus.jobs.doctor", "job"),
    ("python3 -m verl.model_merger merge", "job"),
    ("echo `id`", "job"),
])
def test_workload_inference(command: str, workload: str) -> None:
    assert infer_workload(command)[0] == workload

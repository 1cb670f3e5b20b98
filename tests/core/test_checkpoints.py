"""verl's checkpoint folder and resume overrides (core/checkpoints.py): pure functions."""

from pathlib import PurePosixPath

from argus.core import checkpoints as ck

JOB = PurePosixPath("/r/users/alice/jobs/t1")


def test_step_names() -> None:
    assert ck.step_of("global_step_12") == 12
    assert [ck.step_of(n) for n in ("global_step_", "global_step_x", "global_step_1/", "tmp", "global_step_-1")] \
        == [None] * 5


def test_checkpoint_folder_follows_default_local_dir() -> None:
    basic = ["python3", "-m", "verl.trainer.main_ppo", "trainer.default_local_dir=/r/users/alice/jobs/t1/checkpoints",
             "trainer.default_local_dir=/r/users/alice/ck"]  # Hydra: the last one wins
    assert ck.checkpoint_folder(basic, JOB) == PurePosixPath("/r/users/alice/ck")
    adv = ["bash", "-lc", "python3 -m verl.trainer.main_ppo \\\n  trainer.default_local_dir=out/../ck2 # note"]
    assert ck.checkpoint_folder(adv, JOB) == JOB / "ck2"  # relative: below the driver's cwd, the job folder
    assert ck.checkpoint_folder(["bash", "-lc", "python3 -m x"], JOB) == JOB / "checkpoints"
    # a verl trainer that names no folder: verl's default checkpoints/<project_name>/<experiment_name>
    assert ck.checkpoint_folder(["bash", "-lc", "python3 -m verl.trainer.main_ppo a=1"], JOB) == \
        JOB / "checkpoints/verl_examples/gsm8k"
    assert ck.checkpoint_folder(["bash", "-lc", "python3 -m verl.trainer.main_ppo trainer.experiment_name=e1"], JOB) \
        == JOB / "checkpoints/verl_examples/e1"
    sft = ["python3", "-m", "torch.distributed.run", "--nproc_per_node=1", "-m", "verl.trainer.sft_trainer"]
    assert ck.checkpoint_folder(sft, JOB) == JOB / "checkpoints/gsm8k-sft/test"
    interp = ["bash", "-lc", "python3 -m x trainer.default_local_dir=${oc.env:HOME}/x"]
    assert ck.checkpoint_folder(interp, JOB) == JOB / "checkpoints"
    assert ck.checkpoint_folder(["bash", "-lc", "python3 'unterminated"], JOB) == JOB / "checkpoints"


def test_with_resume_replaces_earlier_overrides() -> None:
    argv = ["python3", "-m", "m", "a=1", "trainer.resume_mode=auto"]
    once = ck.with_resume(argv, "/ck/global_step_2")
    assert once == ["python3", "-m", "m", "a=1", "trainer.resume_mode=resume_path",
                    "trainer.resume_from_path=/ck/global_step_2"]
    assert ck.with_resume(once, "/ck/global_step_4")[-2:] == ["trainer.resume_mode=resume_path",
                                                              "trainer.resume_from_path=/ck/global_step_4"]
    adv = ["bash", "-lc", "python3 -m argus.jobs.steps a=1\n"]
    one = ck.with_resume(adv, "/c k/global_step_2")
    two = ck.with_resume(one, "/c k/global_step_4")
    assert two[2] == "python3 -m argus.jobs.steps a=1 trainer.resume_mode=resume_path " \
                     "'trainer.resume_from_path=/c k/global_step_4'"
    assert ck.last_value(ck.command_words(two), ck.PATH_KEY) == "/c k/global_step_4"


def test_resume_spec_and_disable() -> None:
    basic = {"workload": "grpo", "overrides": ["x=1", "trainer.resume_from_path=/old/global_step_1"]}
    out = ck.resume_spec(basic, "$HOME/jobs/t1/checkpoints/global_step_3")
    assert out["overrides"] == ["x=1", "trainer.resume_mode=resume_path",
                                "trainer.resume_from_path=$HOME/jobs/t1/checkpoints/global_step_3"]
    assert basic["overrides"][1].endswith("global_step_1")  # the input is not changed
    adv = ck.resume_spec({"kind": "advanced", "command": "python3 -m m"}, "$HOME/x/global_step_3")
    assert adv["command"] == "python3 -m m trainer.resume_mode=resume_path trainer.resume_from_path=$HOME/x/global_step_3"
    assert ck.resume_disabled(["python3", "-m", "m", "trainer.resume_mode=disable"])
    assert not ck.resume_disabled(["python3", "-m", "m", "trainer.resume_mode=disable", "trainer.resume_mode=auto"])

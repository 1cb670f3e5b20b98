"""Resume specs pass REAL verl validation: verl's own keys (trainer.resume_mode / resume_from_path) compose."""

from __future__ import annotations

from tests.helpers import submit_spec
from tests.services.test_checkpoints import write_step
from tests.verl.test_verl_admission import PPO_ARGS, advanced, basic

submit = submit_spec


def test_resume_basic_and_advanced_specs_through_verl(verl_server, alice):
    home = verl_server.ctx.settings.root / "users" / "alice"
    for body, folder in ((basic(), "checkpoints"), (advanced(PPO_ARGS), "checkpoints/verl_examples/gsm8k")):
        tid = submit(alice, body)
        assert alice.get(f"/api/v2/tasks/{tid}/checkpoints").json()["folder"] == f"$HOME/jobs/{tid}/{folder}"
        write_step(home / "jobs" / tid / folder, 3)
        alice.post(f"/api/v2/tasks/{tid}/cancel")
        r = alice.post(f"/api/v2/tasks/{tid}/resume", json={})
        assert r.status_code == 201, r.text
        new = r.json()["task_id"]
        argv = alice.get(f"/api/v2/tasks/{new}/spec").json()["argv"]
        words = argv if argv[:2] != ["bash", "-lc"] else argv[2].split()
        assert "trainer.resume_mode=resume_path" in words
        assert f"trainer.resume_from_path={home}/jobs/{tid}/{folder}/global_step_3" in words
        assert alice.get(f"/api/v2/tasks/{new}").json()["resumed_from"] == tid

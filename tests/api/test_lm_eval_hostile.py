"""lm-eval evaluations (issue 38), hostile: a task name or a folder of an ``lm_eval`` block cannot leave its
argument, reach another user's home or run a substitution; another user's checkpoint cannot be named."""

import pytest
import yaml

from tests.envs_fixtures import LM_EVAL_ENV, lm_eval_env
from tests.helpers import post_spec

pytestmark = pytest.mark.hostile


def _spec(**lm_eval) -> str:
    doc = {"kind": "eval", "model_id": "$HOME/models/tiny", "env": LM_EVAL_ENV,
           "lm_eval": {"tasks": ["tiny_arith"], "include_path": "$HOME/code/lm_tasks", **lm_eval}}
    return yaml.safe_dump(doc)


def _fields(r) -> list[str]:  # noqa: ANN001
    assert r.status_code == 400, r.text
    return [e["field"] for e in r.json()["detail"]["errors"]]


def test_lm_eval_values_stay_one_argument_and_paths_stay_home(live) -> None:
    alice, _ = live.new_user("alice"), live.new_user("bob")
    lm_eval_env(live.ctx.settings.root)
    users = f"{live.ctx.settings.root}/users"
    for tasks in (["t;id"], ["t --output_path /tmp/x"], ["$(id)"], ["../../etc/passwd"], [""], "a,b"):
        assert _fields(post_spec(alice, _spec(tasks=tasks))) == ["lm_eval.tasks"], tasks
    for folder in ("$HOME/../bob/code", f"{users}/bob/code", "$HOME/code/$(id)", "$HOME/code/`id`"):
        r = post_spec(alice, _spec(include_path=folder))
        assert r.status_code == 400 and "command" in _fields(r), (folder, r.text)
    for ck in (f"{users}/bob/jobs/t/checkpoints/global_step_2", "$HOME/../bob/jobs/t/checkpoints/global_step_2"):
        doc = yaml.safe_load(_spec())
        doc.pop("model_id")
        r = post_spec(alice, yaml.safe_dump({**doc, "checkpoint": ck}))
        assert r.status_code == 400 and "another user's home" in r.text, (ck, r.text)
    # a folder with a space and a shell metacharacter is one quoted word of the program's command, not two
    r = post_spec(alice, _spec(include_path="$HOME/code/my tasks;touch pwned"))
    assert r.status_code == 201, r.text
    spec = alice.get(f"/api/v2/tasks/{r.json()['task_id']}/spec").json()
    assert " --include-path '$HOME/code/my tasks;touch pwned' " in spec["command_raw"], spec["command_raw"]

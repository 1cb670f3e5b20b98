"""Property test: no user input makes submission fail with anything but a ClientError listing errors."""

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argus.core.admission import AdmissionPolicy
from argus.core.paths import DataLayout
from argus.db.session import Database
from argus.errors import ClientError
from argus.services.principal import Principal
from argus.services.tasks import submit_task
from argus.services.users import create_user
from argus.settings import DEFAULT_ENTRY_ALLOWLIST

pytestmark = pytest.mark.hostile  # the hostile-input suite: grows with every hole found

FIELDS = ["kind", "workload", "nnodes", "n_gpus_per_node", "command", "model_id", "train_file", "val_file",
          "name", "priority", "overrides", "total_epochs", "lr", "reward_path", "bogus"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                    st.text(max_size=60), st.sampled_from(["advanced", "basic", "ppo", "grpo", "sft", "job",
                                                           "python3 -m verl.trainer.main_ppo", "$HOME/x", "~bob",
                                                           "/private/users/bob", "a; rm -rf /", "$(id)"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3), max_leaves=6)
docs = st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)


def _setup(tmp: Path):
    db = Database(f"sqlite:///{tmp / 'f.db'}")
    db.migrate()
    with db.session() as s:
        uid = create_user(s, tmp / "root", "alice").id
    policy = AdmissionPolicy(layout=DataLayout.at(str(tmp / "root")), entry_allowlist=tuple(DEFAULT_ENTRY_ALLOWLIST))
    return db, Principal(uid, "alice"), policy


def test_structured_garbage(tmp_path):
    db, who, policy = _setup(tmp_path)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(doc=docs, as_json=st.booleans())
    def check(doc, as_json):
        import json

        body = json.dumps(doc, default=str) if as_json else yaml.safe_dump(doc)
        with db.session() as s:
            try:
                submit_task(s, who, body, policy=policy, content_type="application/json" if as_json else None)
            except ClientError as exc:
                assert exc.errors, exc
                for e in exc.errors:
                    assert e.field and e.message
                    json.dumps(e.as_dict(), allow_nan=False)  # what the API will send

    check()


def test_text_garbage(tmp_path):
    db, who, policy = _setup(tmp_path)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=st.text(max_size=300))
    def check(body):
        with db.session() as s:
            try:
                submit_task(s, who, body, policy=policy)
            except ClientError as exc:
                assert exc.errors

    check()

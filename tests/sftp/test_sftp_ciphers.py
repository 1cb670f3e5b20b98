"""``settings.sftp_ciphers`` narrows what the SFTP server offers (AES-GCM only is the fast choice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus.settings import Settings
from tests.helpers import free_port


@pytest.fixture
def sftp_settings(tmp_path: Path) -> Settings:  # overrides conftest's: same, plus a GCM-only offer
    return Settings(state_dir=tmp_path / "state", verl_validation="off", sftp_enabled=True,
                    sftp_port=free_port(), login_max_failures=3, login_window_s=30,
                    sftp_ciphers="aes128-gcm@openssh.com, aes256-gcm@openssh.com")


def test_gcm_only_offer_is_negotiated_by_paramiko_and_openssh(env):
    with env.paramiko("alice") as c:
        assert c.get_transport().remote_cipher in ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
    p = env.sftp("alice", "ls /\n")
    assert "datasets" in p.stdout

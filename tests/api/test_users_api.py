"""Users, tokens, auth and health through real HTTP."""


def test_health_needs_no_auth(live):
    with live.client() as c:
        r = c.get("/api/v2/health")
        assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_auth_required_everywhere_else(live):
    with live.client() as c:
        for path in ("/api/v2/tasks", "/api/v2/me", "/api/v2/users"):
            r = c.get(path)
            assert r.status_code == 401 and r.json()["detail"]["code"] == "unauthorized"
    with live.client("argus_wrong") as c:
        assert c.get("/api/v2/me").status_code == 401


def test_admin_manages_users_and_tokens(live):
    with live.admin() as a:
        assert a.get("/api/v2/me").json()["is_admin"] is True
        r = a.post("/api/v2/users", json={"name": "alice"})
        assert r.status_code == 201 and r.json()["name"] == "alice"
        assert a.post("/api/v2/users", json={"name": "alice"}).status_code == 409
        for bad in ("Alice", "a", "1abc", "a/b", "../x", "x" * 40, "al ice"):
            r = a.post("/api/v2/users", json={"name": bad})
            assert r.status_code == 400, bad
            assert r.json()["detail"]["errors"][0]["field"] == "name"
        t = a.post("/api/v2/users/alice/tokens", json={"name": "laptop"}).json()
        names = [u["name"] for u in a.get("/api/v2/users").json()]
        assert names == ["admin", "alice"]
    with live.client(t["token"]) as alice:
        me = alice.get("/api/v2/me").json()
        assert me["name"] == "alice" and me["is_admin"] is False
        assert me["home"].endswith("/users/alice")
        assert alice.get("/api/v2/users").status_code == 403
        assert alice.post("/api/v2/users", json={"name": "eve"}).status_code == 403
    with live.admin() as a:
        toks = a.get("/api/v2/users/alice/tokens").json()
        assert toks[0]["name"] == "laptop" and "token" not in toks[0]
        assert a.delete(f"/api/v2/users/alice/tokens/{t['id']}").status_code == 200
    with live.client(t["token"]) as alice:
        assert alice.get("/api/v2/me").status_code == 401


def test_disabled_user_is_refused(live):
    alice = live.new_user("alice")
    assert alice.get("/api/v2/me").status_code == 200
    with live.admin() as a:
        assert a.post("/api/v2/users/alice/disable").json()["disabled"] is True
    r = alice.get("/api/v2/me")
    assert r.status_code == 401 and r.json()["detail"]["code"] == "user_disabled"
    with live.admin() as a:
        a.post("/api/v2/users/alice/enable")
    assert alice.get("/api/v2/me").status_code == 200


def test_unknown_user_404(live):
    with live.admin() as a:
        assert a.post("/api/v2/users/nobody/tokens", json={}).status_code == 404
        assert a.post("/api/v2/users/nobody/disable").status_code == 404


def test_password_and_keys(live):
    alice = live.new_user("alice")
    r = alice.post("/api/v2/me/password", json={"password": "short"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "password"
    assert alice.post("/api/v2/me/password", json={"password": "correct horse battery"}).status_code == 204
    r = alice.post("/api/v2/me/keys", json={"public_key": "ssh-rsa nonsense"})
    assert r.status_code == 400 and r.json()["detail"]["errors"][0]["field"] == "public_key"
    import asyncssh

    pub = asyncssh.generate_private_key("ssh-ed25519", comment="alice@laptop").export_public_key().decode()
    k = alice.post("/api/v2/me/keys", json={"public_key": pub})
    assert k.status_code == 201 and k.json()["fingerprint"].startswith("SHA256:")
    assert alice.post("/api/v2/me/keys", json={"public_key": pub}).status_code == 409
    assert len(alice.get("/api/v2/me/keys").json()) == 1
    bob = live.new_user("bob")
    assert bob.delete(f"/api/v2/me/keys/{k.json()['id']}").status_code == 404
    assert alice.delete(f"/api/v2/me/keys/{k.json()['id']}").status_code == 204
    assert alice.get("/api/v2/me/keys").json() == []


def test_openapi_docs(live):
    with live.client() as c:
        assert c.get("/docs").status_code == 200
        paths = c.get("/openapi.json").json()["paths"]
        for p in ("/api/v2/tasks", "/api/v2/tasks/{task_id}/spec", "/api/v2/users/{name}/tokens", "/api/v2/me/keys"):
            assert p in paths


def test_the_sftp_command_never_names_a_wildcard_listen_address(tmp_path):
    """`argus head` listens on 0.0.0.0: users must be told the address to connect to."""
    from argus.settings import Settings

    head = Settings(state_dir=tmp_path, sftp_host="0.0.0.0", advertise_address="10.0.0.5")
    assert head.sftp_public_host == "10.0.0.5"
    assert Settings(state_dir=tmp_path, sftp_host="0.0.0.0", public_url="https://argus.lab:8443").sftp_public_host \
        == "argus.lab"
    assert Settings(state_dir=tmp_path, sftp_host="0.0.0.0").sftp_public_host not in ("0.0.0.0", "")
    assert Settings(state_dir=tmp_path, sftp_host="127.0.0.1").sftp_public_host == "127.0.0.1"

"""WebUI part 2 in a real Chromium against a real ``argus up`` (issue 13, "How it is checked").

The Data page (file browser, uploads, previews), Account, Nodes and Admin. One server for the
module (tests/web/conftest.py); the API and the disk are used only to set things up and to
check what the page did. The big upload is 64 MiB, not the issue's 300 MB, to keep CI time sane:
the page's code path is the same (one streamed PUT per file); bench/web_upload.py pushes 2 GB
through the same endpoint and measures the server's memory. To see the progress bar move on a
loopback connection, Chromium's own network throttling (DevTools protocol) slows the upload.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.waiting import wait_until
from tests.web.conftest import PASSWORDS, Pages, Up, answer, shot, sign_in, sign_in_with_token

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
REPO = Path(__file__).resolve().parents[2]
BIG = 64 * 1024 * 1024


def home(up: Up, user: str) -> Path:
    return up.root / "users" / user


def put(up: Up, user: str, path: str, data: bytes) -> None:
    with up.api(user) as c:
        parent = path.rsplit("/", 1)[0]
        if parent:
            assert c.post("/api/v2/files/mkdir", json={"path": parent, "parents": True}).status_code == 201
        r = c.put("/api/v2/files/content", params={"path": path}, content=data)
        assert r.status_code == 201, r.text


def throttle_uploads(page, bytes_per_s: int) -> None:  # noqa: ANN001
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                  "uploadThroughput": bytes_per_s})


def make_file(tmp: Path, name: str, size: int) -> Path:
    path = tmp / name
    with path.open("wb") as f:
        block = os.urandom(1 << 20)
        for i in range(size // len(block)):
            f.write(block[:-8] + i.to_bytes(8, "little"))  # every MiB differs: a misplaced chunk shows
    return path


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def parts_in(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".argus-part")]


def test_big_upload_shows_progress_and_the_file_appears_only_when_complete(up: Up, pages: Pages, tmp_path: Path) -> None:
    src = make_file(tmp_path, "big.bin", BIG)
    page = pages.new(user="alice")
    page.goto(f"{up.url}/data?path=%2Fdatasets")
    page.wait_for_function("() => document.body.dataset.loaded === '/datasets'")
    throttle_uploads(page, 16 * 1024 * 1024)
    page.set_input_files("#file-input", str(src))
    seen, absent = [], []
    target = home(up, "alice") / "datasets" / "big.bin"

    def idle() -> bool:  # each look samples the progress bar, and whether the file shows under its name
        value = page.evaluate("Number(document.getElementById('up-overall').value)")
        if page.evaluate("document.body.dataset.uploads") == "idle":  # a finished row is cleared (issue 25)
            return True
        if 0 < value < BIG:
            seen.append(value)
            absent.append(not target.exists())
            if len(seen) == 3:
                shot(page, "data-upload-en")
        return False

    wait_until(idle, 120, every=0.2, what=lambda: f"the upload to finish; progress seen: {seen}")
    absent_while_uploading = sum(absent)
    assert page.locator("#up-list li").count() == 0 and page.evaluate("document.body.dataset.uploadsDone") == "1"
    assert len(set(seen)) >= 3, f"the progress bar did not move: {seen}"
    assert absent_while_uploading >= 3  # nothing under the final name until the last byte
    assert re.search(r"/s", page.locator("#up-overall-text").inner_text())  # a speed was shown
    assert digest(target) == digest(src)
    assert parts_in(target.parent) == []
    page.locator('#files-body tr[data-name="big.bin"]').wait_for()


def test_canceling_half_way_leaves_no_partial_file(up: Up, pages: Pages, tmp_path: Path) -> None:
    src = make_file(tmp_path, "half.bin", BIG)
    page = pages.new(user="alice")
    page.goto(f"{up.url}/data?path=%2Fdatasets")
    page.wait_for_function("() => document.body.dataset.loaded === '/datasets'")
    throttle_uploads(page, 8 * 1024 * 1024)
    page.set_input_files("#file-input", str(src))
    page.wait_for_function(f"() => Number(document.getElementById('up-overall').value) > {BIG // 3}", timeout=60_000)
    folder = home(up, "alice") / "datasets"
    assert parts_in(folder), "the upload should be writing its hidden temp file"
    page.click("#up-list .up-cancel")
    page.locator('#up-list li[data-state="canceled"]').wait_for()
    wait_until(lambda: not parts_in(folder), 20, every=0.2,
               what=lambda: f"no hidden part left; {parts_in(folder)}")
    assert parts_in(folder) == [] and not (folder / "half.bin").exists()
    with up.api("alice") as c:
        assert c.get("/api/v2/files", params={"path": "/datasets/half.bin"}).status_code == 404


def test_common_is_read_only_in_the_page_and_the_server_refuses_an_upload(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    page.goto(f"{up.url}/data?path=%2Fcommon%2Fdatasets")
    page.wait_for_function("() => document.body.dataset.loaded === '/common/datasets'")
    assert page.locator("#readonly-note").is_visible()
    assert not page.locator("#write-tools").is_visible()
    assert page.locator("#files-body .delete, #files-body .rename").count() == 0
    status = page.evaluate("""async () => {
        const s = await (await fetch('/api/v2/session')).json();
        const r = await fetch('/api/v2/files/content?path=%2Fcommon%2Fdatasets%2Fx.bin',
            {method: 'PUT', body: 'data', headers: {'X-CSRF-Token': s.csrf_token}});
        return r.status; }""")
    assert status == 403
    assert not (up.root / "datasets" / "x.bin").exists()
    shot(page, "data-common-en")


def test_parquet_preview_copy_home_path_and_a_task_reads_it(up: Up, pages: Pages, tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "examples/make_dataset.py"), str(tmp_path), "--train", "48", "--test", "8"],
                   check=True, capture_output=True)
    put(up, "alice", "/datasets/gsm/train.parquet", (tmp_path / "train.parquet").read_bytes())
    put(up, "alice", "/datasets/gsm/notes.yaml", b"data:\n  train_batch_size: 16\n" + b"# line\n" * 500)
    page = pages.new(user="alice")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=up.url)
    page.goto(f"{up.url}/data?path=%2Fdatasets%2Fgsm")
    page.click('#files-body tr[data-name="train.parquet"] .fname')
    page.wait_for_function("() => document.getElementById('preview').dataset.kind === 'parquet'")
    assert "48" in page.locator("#pv-rows").inner_text()
    for col in ("prompt", "data_source", "reward_model"):
        assert page.locator(f'#pv-body tr.verl[data-column="{col}"]').count() == 1, col
    assert page.locator('#pv-body tr[data-column="ability"]').get_attribute("class") == ""
    assert "Sam has" in page.locator("#pv-body table.rows").inner_text()
    shot(page, "data-parquet-en")
    page.click('#files-body tr[data-name="train.parquet"] .copy-path')
    page.wait_for_function("() => document.body.dataset.copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == "$HOME/datasets/gsm/train.parquet"
    # a text preview: the first lines only
    page.click('#files-body tr[data-name="notes.yaml"] .fname')
    page.wait_for_function("() => document.getElementById('preview').dataset.kind === 'text'")
    assert page.locator("#pv-body pre").inner_text().startswith("data:\n  train_batch_size: 16")
    assert "null" not in page.locator("#pv-body").inner_text()
    # the copied path works in a task spec: a CPU job scores rows of the parquet file through it
    put(up, "alice", "/code/reward.py", (REPO / "examples/reward.py").read_bytes())
    spec = ("kind: advanced\nworkload: job\nname: reads-copied-path\nnnodes: 1\nn_gpus_per_node: 0\n"
            f"command: python3 -m argus.jobs.reward_check --reward $HOME/code/reward.py --data {copied} --rows 3\n")
    with up.api("alice") as c:
        r = c.post("/api/v2/tasks", content=spec, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
        ended = ("SUCCEEDED", "FAILED", "CANCELED")
        wait_until(lambda: c.get(f"/api/v2/tasks/{tid}").json()["status"] in ended, 240, every=1,
                   what="the job did not finish")
        log = c.get(f"/api/v2/tasks/{tid}/logs").text
        assert c.get(f"/api/v2/tasks/{tid}").json()["status"] == "SUCCEEDED", log[-2000:]
        assert "openai/gsm8k" in log, log[-2000:]
    # the task page's folder link opens the task's folder here
    page.goto(f"{up.url}/tasks/{tid}")
    page.click("#folder")
    page.wait_for_function(f"() => document.body.dataset.loaded === '/jobs/{tid}'")
    assert f"/data?path=%2Fjobs%2F{tid}" in page.url or f"/data?path=/jobs/{tid}" in page.url
    assert page.locator("#crumbs").inner_text().replace("\n", "").endswith(f"jobs/{tid}")


def test_mkdir_rename_delete_folders_and_download(up: Up, pages: Pages, tmp_path: Path) -> None:
    page = pages.new(user="bob")
    page.goto(f"{up.url}/data?path=%2Fcode")
    page.wait_for_function("() => document.body.dataset.loaded === '/code'")
    page.click("#mkdir")
    answer(page, text="proj")
    page.locator('#files-body tr[data-name="proj"]').wait_for()
    for i in range(3):
        put(up, "bob", f"/code/proj/src/f{i}.py", f"print({i})\n".encode())
    data = os.urandom(300_000)
    put(up, "bob", "/code/proj/blob.bin", data)
    page.click('#files-body tr[data-name="proj"] .rename')
    answer(page, text="renamed")
    page.locator('#files-body tr[data-name="renamed"]').wait_for()
    assert (home(up, "bob") / "code/renamed/src/f2.py").exists() and not (home(up, "bob") / "code/proj").exists()
    # download a file and compare bytes
    page.click('#files-body tr[data-name="renamed"] a.dir')
    page.wait_for_function("() => document.body.dataset.loaded === '/code/renamed'")
    with page.expect_download() as dl:
        page.click('#files-body tr[data-name="blob.bin"] a.download')
    saved = tmp_path / "downloaded.bin"
    dl.value.save_as(saved)
    assert saved.read_bytes() == data
    # sorting by size puts the biggest first
    page.click('button.sort[data-sort="size"]')
    assert page.locator("#files-body tr").first.get_attribute("data-name") == "src"  # folders first
    assert page.locator('#files-body tr[data-type="file"]').first.get_attribute("data-name") == "blob.bin"
    shot(page, "data-en")
    # delete the folder: the confirmation names how many files it holds
    page.click('#crumbs a[data-path="/code"]')
    page.wait_for_function("() => document.body.dataset.loaded === '/code'")
    messages: list[str] = []
    page.click('#files-body tr[data-name="renamed"] .delete')
    messages.append(answer(page))
    page.locator('#files-body tr[data-name="renamed"]').wait_for(state="detached")
    assert messages and "4 files" in messages[0] and "1 folders" in messages[0], messages
    assert not (home(up, "bob") / "code/renamed").exists()


HOSTILE = ['<img src=x onerror="window.__xss=1">.txt', "line\nbreak.txt", "x" * 200 + ".log",
           "\u202egnp.exe", "..%2F..%2Fescape"]


def test_hostile_names_render_as_text_and_cannot_leave_the_home(up: Up, pages: Pages) -> None:
    folder = home(up, "bob") / "datasets" / "hostile"
    folder.mkdir(parents=True)
    for name in HOSTILE:
        (folder / name).write_text("hi\n")
    page = pages.new(user="bob")
    page.goto(f"{up.url}/data?path=%2Fdatasets%2Fhostile")
    page.wait_for_function("() => document.body.dataset.loaded === '/datasets/hostile'")
    assert page.locator("#files-body tr").count() == len(HOSTILE)
    names = page.eval_on_selector_all("#files-body tr", "rows => rows.map(r => r.dataset.name)")
    assert sorted(names) == sorted(HOSTILE)
    assert page.locator("#files-body img").count() == 0 and page.evaluate("window.__xss") is None
    page.locator("#files-body tr", has_text="onerror").locator(".fname").click()  # preview of the hostile name
    page.wait_for_function("() => document.getElementById('preview').dataset.kind === 'text'")
    assert page.evaluate("window.__xss") is None
    shot(page, "data-hostile-en")
    for bad in ("%2F..%2F..%2Falice", "%2F..%2F..%2F..%2Fetc", "%2Fjobs%2F..%2F..%2Falice"):
        page.goto(f"{up.url}/data?path={bad}")
        page.wait_for_function("() => document.body.dataset.loaded")
        assert page.locator("#files-body tr").count() == 0
        assert page.locator("#data-error").is_visible()


def test_account_page_password_keys_and_tokens(up: Up, pages: Pages, tmp_path: Path) -> None:
    up.add_user("erin", "erin-pw-1234567")
    PASSWORDS["erin"] = "erin-pw-1234567"
    page = pages.new(user="erin")
    page.goto(f"{up.url}/account")
    page.wait_for_function("() => document.body.dataset.loaded === '1'")
    assert page.locator("#me-name").inner_text() == "erin"
    assert re.search(r"Storage: .* of|Storage: .*no quota", page.locator("#storage-text").inner_text())
    page.locator("#gpu-hours").wait_for()
    key = tmp_path / "k"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "erin@laptop", "-f", str(key)], check=True)
    page.fill("#key-text", key.with_suffix(".pub").read_text())
    page.click("#key-add")
    page.locator("#keys-body tr").first.wait_for()
    assert "erin@laptop" in page.locator("#keys-body").inner_text()
    page.fill("#token-label", "ci <b>bot</b>")
    page.click("#token-create")
    page.locator("#token-secret-box").wait_for()
    secret = page.locator("#token-secret").inner_text()
    assert httpx.get(f"{up.url}/api/v2/me", headers={"Authorization": f"Bearer {secret}"}).json()["name"] == "erin"
    assert page.locator("#tokens-body b").count() == 0 and "ci <b>bot</b>" in page.locator("#tokens-body").inner_text()
    shot(page, "account-en")
    page.locator("#tokens-body tr", has_text="ci <b>bot</b>").locator(".token-revoke").click()
    answer(page)
    page.locator("#tokens-body tr", has_text="ci <b>bot</b>").locator(".token-revoke").wait_for(state="detached")
    assert httpx.get(f"{up.url}/api/v2/me", headers={"Authorization": f"Bearer {secret}"}).status_code == 401
    page.fill("#pw-current", "erin-pw-1234567")  # issue 25: changing a password asks for the current one
    page.fill("#pw-new", "erin-new-pw-99999")
    page.fill("#pw-repeat", "erin-new-pw-99999")
    page.click("#pw-save")
    page.locator("#pw-status.ok").wait_for()
    PASSWORDS["erin"] = "erin-new-pw-99999"
    other = pages.new(user="erin")  # signs in with the new password
    assert other.locator("#who").inner_text() == "erin"


def test_a_key_added_on_the_account_page_logs_in_with_sftp(browser, tmp_path: Path) -> None:  # noqa: ANN001
    """The shared fixture runs without SFTP, so this one starts `argus server` with its SFTP part."""
    from tests.sftp_process import TOKEN, sftp_server_process

    with sftp_server_process(tmp_path, "frank", quiet=True) as srv:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}) as admin:
            token = admin.post("/api/v2/users/frank/tokens", json={}).json()["token"]
        key = tmp_path / "page_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "from-the-page", "-f", str(key)], check=True)
        ctx = browser.new_context()
        try:
            page = ctx.new_page()
            sign_in_with_token(page, srv.url, token)
            page.goto(f"{srv.url}/account")
            page.fill("#key-text", key.with_suffix(".pub").read_text())
            page.click("#key-add")
            page.locator("#keys-body tr", has_text="from-the-page").wait_for()
        finally:
            ctx.close()
        cmd = ["sftp", "-b", "-", "-P", str(srv.sftp_port), "-o", "StrictHostKeyChecking=no",
               "-o", f"UserKnownHostsFile={srv.known_hosts}", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
               "-i", str(key), "frank@127.0.0.1"]
        r = subprocess.run(cmd, input=b"ls /\n", capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        assert b"datasets" in r.stdout


def test_admin_creates_a_user_who_then_signs_in_and_non_admins_get_404(up: Up, pages: Pages) -> None:
    page = pages.new(user="alice")
    r = page.goto(f"{up.url}/admin")
    assert r.status == 404 and page.locator("#not-found").count() == 1
    assert page.locator('a[href="/admin"]').count() == 0
    admin = pages.new()
    sign_in_with_token(admin, up.url, up.admin_token)
    admin.goto(f"{up.url}/admin")
    admin.wait_for_function("() => document.body.dataset.loaded === '1'")
    admin.fill("#new-name", "cora")
    password = admin.input_value("#new-password")
    assert len(password) >= 12
    admin.click("#create-user")
    admin.locator("#created").wait_for()
    assert admin.locator("#created-password").inner_text() == password
    assert admin.locator("#created-token").inner_text().startswith("argus_")
    admin.locator('#users-body tr[data-user="cora"]').wait_for()
    assert re.search(r"\d B|iB", admin.locator('#users-body tr[data-user="alice"]').inner_text())  # storage shown
    shot(admin, "admin-en")
    PASSWORDS["cora"] = password
    cora = pages.new(user="cora")
    assert cora.locator("#who").inner_text() == "cora"
    # disable: cora's session stops working; enable: she can sign in again
    admin.click('#users-body tr[data-user="cora"] .disable')
    answer(admin)
    admin.locator('#users-body tr[data-user="cora"] .enable').wait_for()
    cora.goto(f"{up.url}/data")
    assert "/login" in cora.url
    admin.click('#users-body tr[data-user="cora"] .enable')
    admin.locator('#users-body tr[data-user="cora"] .disable').wait_for()
    sign_in(cora, up, "cora")


def test_nodes_page_and_screenshots_in_both_languages(up: Up, pages: Pages) -> None:
    spec = ("kind: advanced\nworkload: job\nname: wants-a-gpu\nnnodes: 1\nn_gpus_per_node: 1\n"
            "command: python3 -m argus.jobs.gpus\n")
    with up.api("alice") as c:
        r = c.post("/api/v2/tasks", content=spec, headers={"Content-Type": "application/yaml"})
        assert r.status_code == 201, r.text
        tid = r.json()["task_id"]
    page = pages.new(user="alice")
    page.goto(f"{up.url}/nodes")
    page.wait_for_function("() => document.body.dataset.loaded === '1'")
    assert "GPUs:" in page.locator("#nodes-total").inner_text()
    mine = page.locator(f'#queue-body tr[data-task="{tid}"]')
    mine.wait_for()
    with up.api("alice") as c:
        reason = c.get(f"/api/v2/tasks/{tid}").json()["pending_reason"]
    assert reason and reason in mine.inner_text()
    other = pages.new(user="bob")  # bob sees that something waits, not whose or which
    other.goto(f"{up.url}/nodes")
    other.wait_for_function("() => document.body.dataset.loaded === '1'")
    assert tid not in other.locator("#queue-body").inner_text()
    assert "another user's task" in other.locator("#queue-body").inner_text()
    shot(page, "nodes-en")
    zh = pages.new(lang="zh", user="alice")
    for path, name in (("/data?path=%2Fdatasets%2Fgsm", "data"), ("/account", "account"), ("/nodes", "nodes")):
        zh.goto(f"{up.url}{path}")
        zh.wait_for_function("() => document.body.dataset.loaded")
        assert re.search(r"[\u4e00-\u9fff]", zh.locator("h1").inner_text())
        shot(zh, f"{name}-zh")
    zh.goto(f"{up.url}/data?path=%2Fdatasets%2Fgsm")
    zh.wait_for_function("() => document.body.dataset.loaded")
    if zh.locator('#files-body tr[data-name="train.parquet"]').count():
        zh.click('#files-body tr[data-name="train.parquet"] .fname')
        zh.wait_for_function("() => document.getElementById('preview').dataset.kind === 'parquet'")
        assert "verl" in zh.locator("#pv-body").inner_text()
        shot(zh, "data-parquet-zh")
    admin = pages.new(lang="zh")
    sign_in_with_token(admin, up.url, up.admin_token)
    admin.goto(f"{up.url}/admin")
    admin.wait_for_function("() => document.body.dataset.loaded === '1'")
    assert "管理" in admin.locator("h1").inner_text()
    shot(admin, "admin-zh")
    admin.locator(f'#aq-body tr[data-task="{tid}"]').wait_for()  # the queue across users
    assert "alice" in admin.locator(f'#aq-body tr[data-task="{tid}"]').inner_text()
    with up.api("alice") as c:
        assert c.post(f"/api/v2/tasks/{tid}/cancel").status_code == 200


def _png(width: int, height: int) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_image_preview(up: Up, pages: Pages) -> None:
    put(up, "bob", "/datasets/img/red.png", _png(40, 30))
    page = pages.new(user="bob")
    page.goto(f"{up.url}/data?path=%2Fdatasets%2Fimg")
    page.click('#files-body tr[data-name="red.png"] .fname')
    page.wait_for_function("() => { const i = document.querySelector('#pv-body img'); return i && i.complete && i.naturalWidth > 0; }")
    assert page.evaluate("document.querySelector('#pv-body img').naturalWidth") == 40


def test_folder_upload_keeps_its_structure_and_asks_before_replacing(up: Up, pages: Pages, tmp_path: Path) -> None:
    src = tmp_path / "run1"
    (src / "ckpt" / "step_1").mkdir(parents=True)
    (src / "config.yaml").write_text("lr: 1e-6\n")
    (src / "ckpt" / "step_1" / "model.bin").write_bytes(os.urandom(200_000))
    page = pages.new(user="bob")
    page.goto(f"{up.url}/data?path=%2Fmodels")
    page.wait_for_function("() => document.body.dataset.loaded === '/models'")
    page.set_input_files("#folder-input", str(src))
    page.locator('#files-body tr[data-name="run1"]').wait_for()
    page.wait_for_function("() => document.body.dataset.uploads === 'idle'")
    dest = home(up, "bob") / "models" / "run1"
    assert (dest / "ckpt/step_1/model.bin").read_bytes() == (src / "ckpt/step_1/model.bin").read_bytes()
    assert (dest / "config.yaml").read_text() == "lr: 1e-6\n"
    # the same folder again: the page asks first; declining uploads nothing
    messages: list[str] = []
    (src / "config.yaml").write_text("lr: 2e-6\n")
    page.set_input_files("#folder-input", str(src))
    messages.append(answer(page, accept=False))
    page.wait_for_timeout(500)
    assert messages and "run1" in messages[0]
    assert (dest / "config.yaml").read_text() == "lr: 1e-6\n"


def test_a_folder_downloads_as_a_tar(up: Up, pages: Pages, tmp_path: Path) -> None:
    import tarfile

    put(up, "bob", "/code/pkg/a/x.py", b"x = 1\n")
    put(up, "bob", "/code/pkg/y.txt", b"why\n")
    page = pages.new(user="bob")
    page.goto(f"{up.url}/data?path=%2Fcode")
    page.wait_for_function("() => document.body.dataset.loaded === '/code'")
    page.click('#files-body tr[data-name="pkg"] .dir-size')  # a folder's size, asked for
    page.locator('#files-body tr[data-name="pkg"] td.num', has_text="2 files").wait_for()
    assert "10 B" in page.locator('#files-body tr[data-name="pkg"] td.num').inner_text()
    with page.expect_download() as dl:
        page.click('#files-body tr[data-name="pkg"] a.download-dir')
    saved = tmp_path / "pkg.tar"
    dl.value.save_as(saved)
    assert dl.value.suggested_filename == "pkg.tar"
    with tarfile.open(saved) as tar:
        assert sorted(tar.getnames()) == ["pkg", "pkg/a", "pkg/a/x.py", "pkg/y.txt"]
        assert tar.extractfile("pkg/a/x.py").read() == b"x = 1\n"


def test_quota_is_checked_before_and_enforced_during_an_upload(browser, tmp_path: Path,  # noqa: ANN001
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Its own small server (API + SFTP parts, no Ray) with a 1 MiB quota per user."""
    from tests.sftp_process import TOKEN, sftp_server_process

    monkeypatch.setenv("ARGUS_QUOTA_BYTES", str(1 << 20))
    src = tmp_path / "two-mib.bin"
    src.write_bytes(os.urandom(2 << 20))
    with sftp_server_process(tmp_path, "gina", quiet=True) as srv:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {TOKEN}"}) as admin:
            token = admin.post("/api/v2/users/gina/tokens", json={}).json()["token"]
        ctx = browser.new_context()
        try:
            page = ctx.new_page()
            sign_in_with_token(page, srv.url, token)
            page.goto(f"{srv.url}/data?path=%2Fdatasets")
            page.wait_for_function("() => document.body.dataset.loaded === '/datasets'")
            page.set_input_files("#file-input", str(src))  # before: the page refuses, no request
            page.locator("#data-error", has_text="Not enough room").wait_for()
            assert page.locator("#uploads").is_hidden()
            # during: with the page's own check blinded, the server refuses the PUT and the row says why
            page.evaluate("""() => { const real = window.fetch; window.fetch = (url, opts) =>
                String(url).startsWith('/api/v2/files/usage')
                  ? Promise.resolve(new Response('{"used_bytes": 0, "quota_bytes": null}', {status: 200}))
                  : real(url, opts); }""")
            page.set_input_files("#file-input", str(src))
            row = page.locator('#up-list li[data-state="failed"]')
            row.wait_for()
            assert "quota" in row.inner_text().lower(), row.inner_text()
        finally:
            ctx.close()
        home_dir = tmp_path / "state" / "private" / "users" / "gina" / "datasets"
        assert list(home_dir.iterdir()) == []


def test_a_team_folder_on_the_data_page(up: Up, pages: Pages, tmp_path: Path) -> None:
    """Issue 26: alice and bob (team tdata) share /teams/tdata on the page; the quota bar there is the team's;
    the synthetic /teams is listed but has no write controls."""
    with up.api() as a:
        assert a.post("/api/v2/teams", json={"name": "tdata", "quota_bytes": 10 * 2**20}).status_code == 201
        for who in ("alice", "bob"):
            assert a.post("/api/v2/teams/tdata/members", json={"user": who}).status_code == 201
    src = tmp_path / "shared.txt"
    src.write_text("team rows\n")
    page = pages.new(user="alice")
    page.goto(f"{up.url}/data")
    page.wait_for_function("() => document.body.dataset.loaded === '/'")
    assert page.locator('#files-body tr[data-name="teams"]').count() == 1
    page.goto(f"{up.url}/data?path=%2Fteams")
    page.wait_for_function("() => document.body.dataset.loaded === '/teams'")
    assert page.locator('#files-body tr[data-name="tdata"]').count() == 1
    assert not page.locator("#write-tools").is_visible()
    page.goto(f"{up.url}/data?path=%2Fteams%2Ftdata")
    page.wait_for_function("() => document.body.dataset.loaded === '/teams/tdata'")
    page.wait_for_function("() => /10\\.0 MiB/.test(document.getElementById('data-quota-text').textContent)")
    page.set_input_files("#file-input", str(src))
    page.wait_for_function("() => document.body.dataset.uploads === 'idle' && document.body.dataset.uploadsDone === '1'")
    assert (up.root / "teams" / "tdata" / "shared.txt").read_text() == "team rows\n"
    with up.api("bob") as c:
        assert c.get("/api/v2/files/content", params={"path": "/teams/tdata/shared.txt"}).text == "team rows\n"

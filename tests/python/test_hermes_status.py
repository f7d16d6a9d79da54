"""`skillidx hermes status` as a user runs it from the agent's environment: the plugin
installed and enabled, the index's last sync, and the skills offered compared with what
Hermes' own builder offers for the same home (equal on the example home)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKILLIDX = Path(sys.executable).parent / "skillidx"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SKILLIDX), *args], capture_output=True, text=True, timeout=300)


def test_status_reports_the_plugin_the_index_and_hermes_own_offer(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    shutil.copytree(REPO / "examples" / "hermes-home", home)
    before = json.loads(run("hermes", "status", "--json", "--home", str(home)).stdout)
    assert not before["plugin_installed"] and not before["indexed"]

    assert run("hermes", "install", "--home", str(home)).returncode == 0
    assert run("sync", "--home", str(home)).returncode == 0
    r = run("hermes", "status", "--json", "--home", str(home))
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["plugin_installed"] and s["plugin_current"] and s["plugin_enabled"]
    assert s["indexed"] and s["generation"] >= 1 and s["offered"] > 50
    assert s["hermes_error"] is None, s["hermes_error"]
    c = s["hermes"]
    assert c["python"] == sys.executable
    assert (c["only_hermes"], c["only_skillidx"]) == ([], []), c
    assert c["hermes"] == c["skillidx"] == s["offered"]
    # The user's home is left as it was: no snapshot written into it by the comparison.
    assert not (home / ".skills_prompt_snapshot.json").exists()

    text = run("hermes", "status", "--home", str(home)).stdout
    assert "enabled in config.yaml yes" in text and "the same skills" in text
    # The listing the plugin sends: the default budget, and the home's size under it.
    assert s["index_budget"] == 1500
    t = s["listing_tokens"]
    assert 0 < t["budgeted"] <= 1500 and t["budgeted"] <= t["names_only"], t
    assert "listing sent by the plugin: budget 1500 tokens" in text
    (home / ".env").write_text("SKILL_RETRIEVAL_INDEX_BUDGET=200\n")
    small = json.loads(run("hermes", "status", "--json", "--home", str(home)).stdout)
    assert small["index_budget"] == 200 and small["listing_tokens"]["budgeted"] <= 200, small

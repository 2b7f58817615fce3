"""`planc init`: a working starting point in an empty folder, never over an existing file."""

from __future__ import annotations

import json

from cli import invoke, planc_completed


def test_init_writes_a_project_that_checks_and_runs(tmp_path):
    result = invoke("init", tmp_path / "notes")
    assert result.exit_code == 0, result.output
    folder = tmp_path / "notes"
    assert sorted(path.name for path in folder.iterdir()) == ["hello.plan", "planc.toml", "policy.cedar", "tools.py"]
    checked = planc_completed("check", "--strict", "hello.plan", cwd=folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = planc_completed(
        "run", "hello.plan", cwd=folder, env={"PATH": "/usr/bin:/bin", "PLANC_STORE": str(tmp_path / "runs.sqlite")}
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"count": 1, "notes": ["planc is set up"]}


def test_init_refuses_to_overwrite(tmp_path):
    (tmp_path / "planc.toml").write_text("# mine\n", encoding="utf-8")
    result = invoke("init", tmp_path)
    assert result.exit_code == 2 and "already exists" in result.output and "Traceback" not in result.output
    assert (tmp_path / "planc.toml").read_text() == "# mine\n"
    assert not (tmp_path / "tools.py").exists()  # nothing written at all

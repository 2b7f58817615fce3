"""`planc resume`: a `planc run` killed with SIGKILL at random points, then resumed (issue 6 acceptance)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

PLANC = [sys.executable, "-c", "from planc.cli import main; main()"]

TOOLS = '''
import os, time

def read(n):
    time.sleep(0.01)
    return [f"m{i}" for i in range(n)]

def send(text):
    time.sleep(0.01)
    with open(os.environ["PLANC_TEST_SENT"], "a") as f:
        f.write(text + "\\n")
        f.flush()
    time.sleep(0.02)
    return {"sent": text}
'''

TOML = '''
[tools.read]
provider = "python:{module}:read"
params = {{ n = {{ type = "integer" }} }}
required = ["n"]
effects = {{ read_only = true }}

[tools.send]
provider = "python:{module}:send"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
effects = {{ idempotent = false }}
'''

PLAN = '''read(n: 6)
map(over: $1, do: { send(text: item) })
read(n: 2)
reshape(value: {sent: $2, more: $3})
'''


def finished_calls(store: Path) -> list[tuple]:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT sequence, step, tool, input, output FROM calls "
                          "WHERE finished_at IS NOT NULL ORDER BY sequence").fetchall()


def test_sigkill_then_resume_never_repeats_a_non_idempotent_call(tmp_path):
    module = f"resumetools_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "planc.toml").write_text(TOML.format(module=module), encoding="utf-8")
    (tmp_path / "p.plan").write_text(PLAN, encoding="utf-8")
    rng = random.Random(6)
    outcomes = Counter()
    attempt = 0
    while outcomes["resumed"] + outcomes["unknown"] < 50 and attempt < 150:  # 50 kills that land mid-run
        attempt += 1
        store, sent = tmp_path / f"runs{attempt}.sqlite", tmp_path / f"sent{attempt}.log"
        env = {**os.environ, "PLANC_TEST_SENT": str(sent), "PYTHONPATH": str(tmp_path)}
        env.pop("PLANC_STORE", None)
        process = subprocess.Popen([*PLANC, "run", "--store", str(store), "p.plan"], cwd=tmp_path, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.1, 0.35))
        process.send_signal(signal.SIGKILL)
        process.communicate()
        if not store.exists():  # killed before the run was recorded
            outcomes["before"] += 1
            continue
        with sqlite3.connect(store) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            row = db.execute("SELECT id, status FROM runs").fetchone() if "runs" in tables else None
        if row is None:
            outcomes["before"] += 1
            continue
        run_id, status = row
        acknowledged = finished_calls(store)
        if status != "running":
            outcomes["finished"] += 1
            continue
        resumed = subprocess.run([*PLANC, "resume", run_id, "--store", str(store)], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=30)
        with sqlite3.connect(store) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        after = finished_calls(store)
        assert all(call in after for call in acknowledged), "an acknowledged call was lost"
        lines = sent.read_text().split() if sent.exists() else []
        assert not [text for text, n in Counter(lines).items() if n > 1], f"attempt {attempt}: send repeated"
        if resumed.returncode == 0:
            outcomes["resumed"] += 1
            assert sorted(lines) == [f"m{i}" for i in range(6)]
            assert '"more"' in resumed.stdout
        else:
            assert resumed.returncode == 1, resumed.stderr
            assert "outcome unknown" in resumed.stderr, resumed.stderr
            outcomes["unknown"] += 1
    assert outcomes["resumed"] + outcomes["unknown"] >= 50, outcomes
    assert outcomes["resumed"] > 0 and outcomes["unknown"] > 0, outcomes
    print(outcomes)

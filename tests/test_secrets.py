"""Secret values never leak into text planc writes: the attack class "a secret reaches text".

`vault` declares `labels = ["secret"]` and returns its secrets: one of 20 characters from an
alphabet no other data here uses (`QXZJVK`), one holding `"`, `\\`, a newline and a non-ASCII
letter, and one too short for the backstop. Each plan makes a secret reach a text planc writes: a
tool's error that quotes its argument, a JSON Schema validation error, a pure step's error, an
`exit` message, an `ask` question. Through `planc run` (with `--events` and `--otel`), no
6-character window of a secret, raw or JSON-, repr- or URL-escaped, is in the store file or its
`-wal`/`-journal`, any `show-run` format, the events file, the spans or stderr; the allowed
twin (the same tool declaring `labels = []`) writes the value, so each check can fail. A field
`x-labels` marks secret is kept out and the rest of its result kept. A six-digit secret's mark and
its call's idempotency key are not found by hashing every candidate as the unkeyed marks and keys
were made; with the key, the mark is found. A secret that decides which steps run is W508; a large
value holding a mark is kept inline; a run recorded with the unkeyed marks still reads.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import sqlite3
from urllib.parse import quote, quote_plus

import pytest
from cli import invoke
from test_attacks import calls, statuses
from tool_project import spied_project

from planc.registry.provenance.redaction import MARK, canonical, key_path

TOKEN = "QXZJVKQXZJVKQXZJVKQX"
ODD = 'QX"ZJ\\VK\nQXÄZJVKQXZJ'
PIN = "042137"
TINY = "QXZJW"  # too short for the backstop to look for: only its label keeps it out
PASSWORD = "VKJZXQVKJZXQVKJZXQVK"  # a field `x-labels` marks secret, in a result that is not

TOOLS = f"""
import os

SPY = os.environ["PLANC_TEST_SPY"]


def _called(line):
    with open(SPY, "a", encoding="utf-8") as spy:
        spy.write(line + "\\n")


def vault():
    _called("vault")
    return {{"token": {TOKEN!r}, "odd": {ODD!r}, "pin": {PIN!r}, "tiny": {TINY!r}}}


def login():
    _called("login")
    return {{"user": "annie", "password": {PASSWORD!r}}}


def dossier():
    _called("dossier")
    return {{"bio": "annie " * 1000, "password": {PASSWORD!r}}}


def use(code):
    _called("use")
    raise ValueError(f"the code {{code!r}} was refused")


def short(code):
    _called("short")
    return "ok"


def note(text):
    _called("note")
    return text


def recall():  # declared with no label, it repeats the vault's token, as a cache would
    _called("recall")
    return {TOKEN!r}


def unlock(pin, request_id):
    _called(f"unlock {{request_id}}")
    return {{"unlocked": True}}
"""

TOML = """
[tools.vault]
provider = "python:{module}:vault"
params = {{}}
returns = {{ type = "object", properties = {{ token = {{ type = "string" }}, odd = {{ type = "string" }}, pin = {{ type = "string" }}, tiny = {{ type = "string" }} }} }}
effects = {{ read_only = true, open_world = false }}
labels = ["secret"]

[tools.login]
provider = "python:{module}:login"
params = {{}}
returns = {{ type = "object", properties = {{ user = {{ type = "string" }}, password = {{ type = "string", x-labels = ["secret"] }} }} }}
effects = {{ read_only = true, open_world = false }}
labels = []

[tools.dossier]
provider = "python:{module}:dossier"
params = {{}}
returns = {{ type = "object", properties = {{ bio = {{ type = "string" }}, password = {{ type = "string", x-labels = ["secret"] }} }} }}
effects = {{ read_only = true, open_world = false }}
labels = []

[tools.use]
provider = "python:{module}:use"
params = {{ code = {{ type = "string" }} }}
labels = []

[tools.short]
provider = "python:{module}:short"
params = {{ code = {{ type = "string", maxLength = 4 }} }}
labels = []

[tools.note]
provider = "python:{module}:note"
params = {{ text = {{ type = "string" }} }}
effects = {{ read_only = true, open_world = false }}
labels = []

[tools.recall]
provider = "python:{module}:recall"
params = {{}}
effects = {{ read_only = true, open_world = false }}
labels = []

[tools.unlock]
provider = "python:{module}:unlock"
params = {{ pin = {{ type = "string" }} }}
idempotency_key = "request_id"
labels = []
"""

# Each plan makes a secret (`$1.FIELD`) reach one kind of text; its exit code and recorded status.
PLANS = {
    "a tool's error": ('vault()\nnote(text: "before")\nuse(code: $1.FIELD)\n', 1, "failed", ["vault", "note", "use"]),
    "a validation error": ("vault()\nshort(code: $1.FIELD)\n", 1, "failed", ["vault"]),
    "a pure step's error": ("vault()\nparse_date(text: $1.FIELD)\n", 1, "failed", ["vault"]),
    "an exit message": ('vault()\nexit(status: "error", message: "the code is {$1.FIELD}")\n', 4, "error", ["vault"]),
    "an ask question": ('vault()\nask(question: "Is {$1.FIELD} yours?")\nnote(text: $2)\n', 0, "ok", ["vault", "note"]),
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    with spied_project(tmp_path, monkeypatch, "secrettools", TOOLS, TOML) as folder:
        (folder / "answers.json").write_text('{"2": "yes"}', encoding="utf-8")
        yield folder


def escaped(value: str) -> set[str]:
    """`value` raw, JSON-, repr- and URL-escaped."""
    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        quote(value, safe=""),
        quote_plus(value),
    }


def windows(value: str) -> set[str]:
    """Every 6-character window of every escaped form of `value` (a shorter form whole)."""
    return {form[start : start + 6] for form in escaped(value) for start in range(max(len(form) - 5, 1))}


def written(project, result, events, spans) -> dict[str, str]:
    """Every text planc wrote for the last run: the store's files, `show-run` in each format, the
    events, the spans and stderr (bytes as Latin-1, so that any window of UTF-8 is found)."""
    files = sorted(project.glob("runs.sqlite*"))  # the file, its -wal and -journal
    assert files
    texts = {"store": "\n".join(path.read_bytes().decode("latin-1") for path in files)}
    for form in ("text", "json", "html"):
        shown = invoke("show-run", "last", "--format", form)
        assert shown.exit_code == 0 and "Traceback" not in shown.output, shown.output
        texts[f"show-run {form}"] = shown.output
    texts["events"] = events.read_bytes().decode("latin-1")
    texts["spans"] = "\n".join(span.to_json() for span in spans.get_finished_spans())
    texts["stderr"] = result.stderr
    return texts


def ran(project, spans, text: str, code: int, status: str, made: list[str]) -> dict[str, str]:
    """`planc run` of `text` with an events file and spans: it ends with exit `code`, recorded `status`,
    the calls `made` and no traceback; what it wrote (`written`)."""
    (project / "p.plan").write_text(text, encoding="utf-8")
    events = project / "events.jsonl"
    result = invoke("run", "p.plan", "--events", events, "--otel", "--answers", "answers.json")
    assert "Traceback" not in result.output
    ended = (result.exit_code, statuses(project), calls(project))
    assert ended == (code, [status], made), result.output
    return written(project, result, events, spans)


def leaks(texts: dict[str, str], secret: str) -> list[tuple[str, str]]:
    found = []
    for window in windows(secret):
        utf8 = window.encode("utf-8").decode("latin-1")
        found += [(name, window) for name, text in texts.items() if window in text or utf8 in text]
    return found


@pytest.mark.parametrize("field, secret", [("token", TOKEN), ("odd", ODD), ("tiny", TINY)])
@pytest.mark.parametrize("case", list(PLANS))
def test_a_secret_reaching_a_text_is_written_nowhere(project, spans, case, field, secret):
    text, code, status, made = PLANS[case]
    texts = ran(project, spans, text.replace("FIELD", field), code, status, made)
    assert leaks(texts, secret) == []
    assert MARK.search(texts["show-run text"]) and MARK.search(texts["events"])


@pytest.mark.parametrize("case", list(PLANS))
def test_a_field_labelled_secret_is_written_nowhere_and_the_rest_is_kept(project, spans, case):
    """`login` is trusted, and its `returns` labels only `password` secret: the password is written
    nowhere, and the user's name, in the same result, is kept as it is."""
    text, code, status, made = PLANS[case]
    texts = ran(
        project, spans, text.replace("vault()", "login()").replace("FIELD", "password"), code, status, ["login", *made[1:]]
    )
    assert leaks(texts, PASSWORD) == []
    assert "annie" in texts["store"] and '"annie"' in texts["events"]


def test_the_backstop_takes_every_form_of_a_secret_out_of_any_text():
    """What the label rule would miss (a text made where no label is known) the run's redaction step
    still takes out: every escaped form of each secret it learned, in strings and keys, marks
    kept."""
    from planc.registry.provenance.labels import LabelView, label_set
    from planc.registry.provenance.redaction import Redactor, mark

    redactor = Redactor()
    redactor.learn({"odd": ODD, "tiny": TINY, "n": 12345678}, LabelView(label_set(["secret"])))
    said = " ".join(sorted(escaped(ODD))) + f" {mark('x')} code 12345678 and {TINY}"
    cleaned = redactor.text(said)
    assert [window for window in windows(ODD) if window in cleaned] == []
    assert mark("x") in cleaned and mark(12345678) in cleaned and TINY in cleaned
    assert redactor.data({ODD: [ODD]}) == {mark(ODD): [mark(ODD)]}


@pytest.mark.parametrize("case", list(PLANS))
def test_the_twin_whose_value_is_not_secret_writes_it(project, spans, case):
    """The same plans, `vault` declaring no secret: the value is written, so the checks above can
    fail."""
    toml = project / "planc.toml"
    declared = toml.read_text().replace('labels = ["secret"]', "labels = []")
    toml.write_text(declared, encoding="utf-8")
    text, code, status, made = PLANS[case]
    texts = ran(project, spans, text.replace("FIELD", "token"), code, status, made)
    assert {name for name, _ in leaks(texts, TOKEN)} >= {"store", "show-run text", "show-run json", "show-run html", "events"}


def test_a_six_digit_secret_is_not_found_by_hashing_every_candidate(project):
    (project / "p.plan").write_text("vault()\nunlock(pin: $1.pin)\n", encoding="utf-8")
    result = invoke("run", "p.plan")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    [_, unlocked] = calls(project)
    key = unlocked.split()[1]  # the idempotency key the tool was given
    with sqlite3.connect(project / "runs.sqlite") as db:
        [(run_id,)] = db.execute("SELECT id FROM runs")
        [(shown, kept_key)] = db.execute("SELECT input, idempotency_key FROM calls WHERE tool = 'unlock'")
    [digest] = re.findall(r"hmac ([0-9a-f]{16})\)", json.loads(shown)["pin"])
    assert MARK.fullmatch(kept_key) and key not in kept_key  # the record keeps the key's mark
    # As the unkeyed marks and keys were made: SHA-256 of the value's JSON, of the call's identity.
    identity = canonical({"run": run_id, "step": "2", "args": {"pin": PIN}})
    before, after = identity.split(PIN)
    marked, keyed = hashlib.sha256(b'"'), hashlib.sha256(before.encode())
    found = []
    for number in range(10**6):
        pin = f"{number:06d}".encode()
        mark_hash, key_hash = marked.copy(), keyed.copy()
        mark_hash.update(pin + b'"')
        key_hash.update(pin + after.encode())
        if mark_hash.hexdigest()[:16] == digest or key_hash.hexdigest() == key:
            found.append(pin)
        elif pin == PIN.encode():  # the search computes what the unkeyed code did
            assert mark_hash.hexdigest() == hashlib.sha256(canonical(PIN).encode()).hexdigest()
            assert key_hash.hexdigest() == hashlib.sha256(identity.encode()).hexdigest()
    assert found == []
    # With the key, which only the user can read, the mark is the true value's.
    secret_key = bytes.fromhex(key_path().read_text().strip())
    assert hmac.new(secret_key, canonical(PIN).encode(), hashlib.sha256).hexdigest()[:16] == digest


def test_a_secret_a_tool_repeats_without_its_label_is_taken_out_by_value_and_keys_no_call(project):
    """The backstop: a value the run knows is secret, come back through a tool declaring no label, is
    marked wherever it is written, and the idempotency key computed over it is its keyed hash's (and a
    secret too); before the vault has told the run, the same value is written as it is."""
    (project / "p.plan").write_text("vault()\nrecall()\nunlock(pin: $2)\n", encoding="utf-8")
    result = invoke("run", "p.plan")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    [*_, unlocked] = calls(project)
    with sqlite3.connect(project / "runs.sqlite") as db:
        [(run_id,)] = db.execute("SELECT id FROM runs")
        [(shown, kept_key)] = db.execute("SELECT input, idempotency_key FROM calls WHERE tool = 'unlock'")
    assert MARK.fullmatch(json.loads(shown)["pin"]) and MARK.fullmatch(kept_key)
    assert TOKEN[:6] not in (project / "runs.sqlite").read_text(errors="replace")
    given = unlocked.split()[1]
    assert given != hashlib.sha256(canonical({"run": run_id, "step": "3", "args": {"pin": TOKEN}}).encode()).hexdigest()
    (project / "p.plan").write_text("recall()\nunlock(pin: $1)\n", encoding="utf-8")
    assert invoke("run", "p.plan").exit_code == 0
    with sqlite3.connect(project / "runs.sqlite") as db:
        [(shown,)] = db.execute("SELECT input FROM calls WHERE tool = 'unlock' AND step = '2'")
    assert json.loads(shown)["pin"] == TOKEN  # the run never learnt it was secret


def test_a_redaction_key_others_can_read_is_refused_in_one_message(project, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (project / "p.plan").write_text("vault()\nnote(text: $1.token)\n", encoding="utf-8")
    assert invoke("run", "p.plan").exit_code == 0  # the key is made, readable by the user alone
    made = tmp_path / "config" / "planc" / "redaction.key"
    assert made.stat().st_mode & 0o777 == 0o600
    made.chmod(0o644)
    result = invoke("run", "p.plan")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"the redaction key {made}: others can read or change it" in result.stderr
    assert f"chmod 600 {made}" in result.stderr
    # Nothing ran again.
    assert calls(project) == ["vault", "note"] and statuses(project) == ["ok", "failed"]


@pytest.mark.parametrize(
    "text, warned, made",
    [
        ('vault()\ndecide(when: $1.pin == "1", then: { note(text: "unlocked") })\n', "$1.pin", ["vault"]),
        ('vault()\nexit(when: $1.token == "x", status: "error")\n', "$1.token", ["vault"]),
        # A call may fail on a secret it is given: whether it failed decides what runs after it.
        ("vault()\ndecide(when: true, then: { note(text: $1.pin) })\n", "$1.pin", ["vault", "note"]),
        # An exit's message fails on nothing: it is written as its mark, and decides nothing.
        ('vault()\nexit(status: "ok", message: "pin {$1.pin}")\n', None, ["vault"]),
    ],
)
def test_a_secret_that_decides_which_steps_run_is_a_warning(project, text, warned, made):
    (project / "p.plan").write_text(text, encoding="utf-8")
    checked = invoke("check", "--format", "json", "p.plan")
    assert checked.exit_code == 0, checked.output
    found = [
        (
            d["code"],
            text.splitlines()[d["span"]["start"]["line"] - 1][d["span"]["start"]["column"] - 1 : d["span"]["end"]["column"] - 1],
        )
        for d in json.loads(checked.stdout)["diagnostics"]
    ]
    assert found == ([("W508", warned)] if warned else [])
    result = invoke("run", "p.plan")  # a warning: the plan runs
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert calls(project) == made and statuses(project) == ["ok"]


@pytest.mark.parametrize("secret", [True, False])
def test_a_large_value_holding_a_mark_is_kept_inline(project, secret):
    """A result longer than a page is kept once, aside, under the hash of its text, unless it holds
    a mark: that hash would differ with the secret where only the mark may."""
    if not secret:
        toml = project / "planc.toml"
        toml.write_text(toml.read_text().replace(', x-labels = ["secret"]', ""), encoding="utf-8")
    (project / "p.plan").write_text("dossier()\n", encoding="utf-8")
    result = invoke("run", "p.plan")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert calls(project) == ["dossier"] and statuses(project) == ["ok"]
    with sqlite3.connect(project / "runs.sqlite") as db:
        [(output,)] = db.execute("SELECT output FROM calls")
        [(aside,)] = db.execute("SELECT count(*) FROM large_values")
    assert output.startswith("@") is (not secret) and (aside == 0) is secret
    assert (PASSWORD in output) is False


def test_a_run_recorded_with_the_unkeyed_marks_still_reads(project):
    """A record an earlier planc wrote holds `{"planc/redacted": {...}}` where a mark is now:
    `show-run` shows it in every format, and a replay stops there, saying it was labelled secret."""
    (project / "p.plan").write_text("vault()\nnote(text: $1.token)\n", encoding="utf-8")
    assert invoke("run", "p.plan").exit_code == 0
    legacy = json.dumps({"planc/redacted": {"length": 22, "sha256": "0" * 64}})
    with sqlite3.connect(project / "runs.sqlite") as db:
        db.execute("UPDATE calls SET output = ? WHERE tool = 'vault'", (legacy,))
    for form in ("text", "json", "html"):
        shown = invoke("show-run", "last", "--format", form)
        assert shown.exit_code == 0 and "planc/redacted" in shown.output, shown.output
    replay = invoke("replay", "last")
    assert replay.exit_code == 1 and "labelled secret" in replay.output
    assert "Traceback" not in replay.output and calls(project) == ["vault", "note"]


def test_the_terminal_approval_shows_a_secret_argument_as_its_mark():
    """`planc run --approve` asks on stderr: a call's `secret` argument is shown by its mark."""
    from rich.console import Console

    from planc.backend.calls.approve import describe
    from planc.backend.calls.hooks import Call
    from planc.registry.provenance.labels import label_set
    from planc.registry.provenance.redaction import mark
    from planc.registry.tools.tool import Tool

    tool = Tool("unlock", {"pin": {"type": "string"}, "note": {"type": "string"}}, labels=[])
    call = Call("2", tool, {"pin": TOKEN, "note": "plain"}, sources={"pin": label_set(["secret"])})
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(describe(call))
    shown = console.export_text()
    assert TOKEN[:6] not in shown and mark(TOKEN) in shown and "plain" in shown

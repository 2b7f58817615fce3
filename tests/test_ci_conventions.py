"""What users of ruff, terraform and actionlint expect of a checker in CI and at a desk: fixes applied
(or shown as a diff), many files and folders at once, --strict, --ignore and ignore comments, one exit
code for a syntax error in every command, compiled plans wherever a plan goes, --color and NO_COLOR."""

from __future__ import annotations

import json

import pytest
from cli import invoke, planc_completed

TOML = """
[tools.search]
params = { query = { type = "string" }, limit = { type = "integer" } }
required = ["query"]
returns = { type = "array", items = { type = "object", properties = { id = { type = "string" } } } }
effects = { read_only = true }

[tools.notify]
params = { channel = { type = "string" }, text = { type = "string" } }
required = ["channel", "text"]
"""

FIXABLE = 'search(query: "disk")\nnotify(channel: ops, text: "{{$1.length}} found")\n'
FIXED = 'search(query: "disk")\nnotify(channel: "ops", text: "{$1.length} found")\n'
UNUSED = 'search(query: "x")\nnotify(channel: "#ops", text: "done")\n'  # W501: the search is never read


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "planc.toml").write_text(TOML, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(project, **files) -> None:
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# --- fixes ------------------------------------------------------------------------------------------


def test_fix_applies_the_fixes_the_diagnostics_carry(project):
    write(project, **{"p.plan": FIXABLE})
    assert invoke("check", "p.plan").exit_code == 1
    result = invoke("check", "--fix", "p.plan")
    assert result.exit_code == 0, result.output
    assert (project / "p.plan").read_text() == FIXED


def test_fix_with_diff_shows_the_fixes_and_writes_nothing(project):
    write(project, **{"p.plan": FIXABLE})
    result = invoke("check", "--fix", "--diff", "p.plan")
    assert result.exit_code == 1  # nothing was written: the plan still has its error
    assert '-notify(channel: ops, text: "{{$1.length}} found")' in result.stdout
    assert '+notify(channel: "ops", text: "{$1.length} found")' in result.stdout
    assert (project / "p.plan").read_text() == FIXABLE
    assert invoke("check", "--diff", "p.plan").exit_code == 2  # --diff without --fix says nothing useful


# --- many files and folders ---------------------------------------------------------------------------


def test_check_and_fmt_take_folders_and_many_files(project):
    write(
        project,
        **{"plans/a.plan": 'search(query: "a")\n', "plans/deep/b.plan": 'search( query:"b" )\n', "plans/notes.txt": "not a plan"},
    )
    checked = invoke("check", "--format", "json", "plans")
    assert checked.exit_code == 0
    assert [json.loads(line)["file"] for line in checked.stdout.splitlines()] == ["plans/a.plan", "plans/deep/b.plan"]
    assert invoke("fmt", "--check", "plans").exit_code == 1  # b.plan is not in canonical form
    assert invoke("fmt", "--write", "plans").exit_code == 0
    assert (project / "plans/deep/b.plan").read_text() == 'search(query: "b")\n'
    assert invoke("fmt", "--check", "plans", "plans/a.plan").exit_code == 0
    assert invoke("fmt", "plans").exit_code == 2  # several files are printed to no one: --check or --write


def test_one_missing_file_does_not_stop_the_others(project):
    write(project, **{"a.plan": 'search(query: "a")\n', "c.plan": 'serch(query: "c")\n'})
    result = invoke("check", "--format", "line", "a.plan", "missing.plan", "c.plan")
    assert result.exit_code == 2  # a file could not be read
    assert "c.plan:1:1: E200" in result.stdout and "missing.plan: no such file" in result.stderr
    assert "Traceback" not in result.output


# --- strictness and ignoring ------------------------------------------------------------------------


def test_strict_makes_warnings_fail(project):
    write(project, **{"p.plan": UNUSED})
    assert invoke("check", "p.plan").exit_code == 0
    result = invoke("check", "--strict", "p.plan")
    assert result.exit_code == 1 and "W501" in result.output


def test_ignore_leaves_out_warnings_but_never_errors(project):
    write(project, **{"p.plan": UNUSED})
    result = invoke("check", "--strict", "--ignore", "W501", "--format", "line", "p.plan")
    assert result.exit_code == 0 and result.stdout == ""
    refused = invoke("check", "--ignore", "W501,E201", "p.plan")
    assert refused.exit_code == 2 and "E201 is an error, and errors cannot be ignored" in refused.output
    assert invoke("check", "--ignore", "W999", "p.plan").exit_code == 2


def test_an_ignore_comment_silences_warnings_on_its_line_or_the_next(project):
    write(
        project,
        **{
            "end.plan": 'search(query: "x")  # planc: ignore[W501]\nnotify(channel: "#o", text: "t")\n',
            "above.plan": '# planc: ignore\nsearch(query: "x")\nnotify(channel: "#o", text: "t")\n',
            "other.plan": 'search(query: "x")  # planc: ignore[W502]\nnotify(channel: "#o", text: "t")\n',
        },
    )
    assert invoke("check", "--strict", "end.plan", "above.plan").exit_code == 0
    assert "W501" in invoke("check", "--strict", "other.plan").output  # another code is not silenced


def test_an_ignore_comment_cannot_silence_an_error(project):
    write(project, **{"p.plan": 'search(query: "x", limt: 1)  # planc: ignore[E201]\n'})
    result = invoke("check", "--format", "line", "p.plan")
    assert result.exit_code == 1
    assert [line.split(": ")[1].split()[0] for line in result.stdout.splitlines()] == ["E201", "W504"]


# --- one exit code for a syntax error ------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["fmt"],
        ["fmt", "--check"],
        ["show"],
        ["optimize"],
        ["diff", "good.plan"],
        ["policy", "explain", "--policy", "p.cedar"],
    ],
)
def test_a_syntax_error_is_exit_1_in_every_command(project, command):
    write(
        project,
        **{
            "broken.plan": 'search(query: "x"\n',
            "good.plan": 'search(query: "x")\n',
            "p.cedar": "permit(principal, action, resource);\n",
        },
    )
    result = invoke(*command, "broken.plan")
    assert result.exit_code == 1, result.output
    assert "E100" in result.output and "Traceback" not in result.output


# --- compiled plans wherever a plan goes -----------------------------------------------------------------


@pytest.mark.parametrize("command", [["check"], ["show"], ["optimize"], ["policy", "explain", "--policy", "p.cedar"]])
def test_a_compiled_plan_is_read_wherever_a_plan_is(project, command):
    write(project, **{"p.plan": 'search(query: "x")\n', "p.cedar": "permit(principal, action, resource);\n"})
    assert invoke("compile", "p.plan", "-o", "p.json").exit_code == 0
    from_text, from_stored = invoke(*command, "p.plan"), invoke(*command, "p.json")
    assert from_stored.exit_code == from_text.exit_code == 0, from_stored.output
    assert from_stored.stdout.replace("p.json", "p.plan") == from_text.stdout


def test_a_tampered_compiled_plan_is_refused_where_it_is_read(project):
    write(project, **{"p.plan": 'search(query: "x")\n'})
    invoke("compile", "p.plan", "-o", "p.json")
    (project / "p.json").write_text((project / "p.json").read_text().replace('"x"', '"y"'), encoding="utf-8")
    result = invoke("check", "p.json")
    assert result.exit_code == 2 and "content hash does not match" in result.output


# --- colour -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, env, coloured",
    [
        (["--color", "always"], {}, True),
        (["--color", "never"], {}, False),
        ([], {}, False),  # not a terminal
        ([], {"NO_COLOR": "1"}, False),
        (["--color", "always"], {"NO_COLOR": "1"}, True),  # said on the command line, it wins
    ],
)
def test_color_follows_the_option_and_no_color(project, options, env, coloured):
    write(project, **{"p.plan": 'serch(query: "x")\n'})
    import os

    done = planc_completed(*options, "check", "p.plan", cwd=project, env={**os.environ, **env})
    assert done.returncode == 1 and "E200" in done.stdout
    assert ("\x1b[" in done.stdout) is coloured

"""A recorded run as one self-contained HTML page: `planc show-run RUN --format html`.

The page holds everything it shows: the style is inline, there is no script (a `<details>` opens
without one), and its Content-Security-Policy forbids loading anything at all, so it can be mailed,
attached to a ticket or opened offline. Every text from the record (tool inputs and results, errors,
model messages, the plan) is escaped: tool output is untrusted, and on this page it is only ever text.
"""

from __future__ import annotations

import json
import time
from html import escape

from planc.passes.cost.cost_words import dollars
from planc.pictures.timeline import Row, row_outcome, rows, span

SHOWN = 50_000  # characters of one value on the page; `--format json` has the whole record
POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem 1.5rem; color: #212529; }
h1 { font-size: 1.4rem; margin: .2rem 0 .6rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .5rem; }
h3 { font-size: .95rem; margin: 1rem 0 .3rem; }
code, pre, .path, .tool { font-family: ui-monospace, monospace; font-size: 13px; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; border-radius: 4px; padding: .5rem .7rem; margin: .3rem 0;
      white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem; overflow: auto; }
.status { border-radius: 1rem; padding: .05rem .6rem; color: #fff; font-size: .9rem; background: #6c757d; }
.status.ok { background: #1e7e34; } .status.failed { background: #b02a37; } .status.error { background: #c96a00; }
.status.running { background: #0b5ed7; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; }
dl.facts dt { color: #6c757d; } dl.facts dd { margin: 0; }
.message { color: #b02a37; }
details.row { border-bottom: 1px solid #eee; }
details.row > summary { display: grid; grid-template-columns: 16rem 7rem 1fr; align-items: center; gap: .6rem;
                        cursor: pointer; padding: .15rem 0; list-style: none; }
details.row > summary::-webkit-details-marker { display: none; }
details.row > summary:hover { background: #f6f8fa; }
.name { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.took { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; color: #495057; }
.track { position: relative; height: .8rem; background: #f1f3f5; border-radius: 2px; }
.bar { position: absolute; top: 0; bottom: 0; min-width: 2px; border-radius: 2px; background: #4c6ef5; }
.inference .bar { background: #9c36b5; } .call .bar { background: #74c0fc; }
.unfinished .bar { background: repeating-linear-gradient(45deg, #adb5bd 0 4px, #dee2e6 4px 8px); }
.failed .bar { background: #e03131; }
.row .body { padding: .2rem 0 .6rem 1.5rem; } .row .body h3 { font-size: .85rem; margin: .4rem 0 0; color: #495057; }
.error { color: #b02a37; }
.scale { display: grid; grid-template-columns: 16rem 7rem 1fr; gap: .6rem; color: #6c757d; font-size: .8rem; }
.scale .ends { display: flex; justify-content: space-between; }
.message-turn { border-left: 3px solid #dee2e6; padding-left: .6rem; margin: .4rem 0; }
.role { font-weight: 600; color: #495057; }
ol.source { font-family: ui-monospace, monospace; font-size: 13px; background: #f6f8fa; border: 1px solid #e1e4e8;
            border-radius: 4px; padding: .5rem .7rem .5rem 3.2rem; margin: .3rem 0; }
ol.source li { white-space: pre-wrap; overflow-wrap: anywhere; } ol.source li::marker { color: #adb5bd; }
"""


def render_run_page(run: dict) -> str:
    """The page of `run`, a run as `RunStore.run()` reads it."""
    start, end = span(run)
    timeline = rows(run)
    inferences = [row for row in timeline if row.is_inference]
    title = f"planc run {run['id']}: {run['status']}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        _header(run, end - start, len(inferences)),
        _section("arguments", "Arguments", _value(run["arguments"])),
        _section("timeline", "Timeline", _timeline(timeline, start, end)),
        _section(
            "inferences",
            f"Model inferences ({len(inferences)})",
            "".join(_inference(row) for row in inferences) or "<p>None.</p>",
        ),
        _section("plan", "Plan", _plan(run["plan"])),
        _section(
            "output",
            "Output",
            _value(run["output"]) if run["status"] in ("ok", "error") else f"<p>None: the run is {escape(run['status'])}.</p>",
        ),
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _header(run: dict, took: float, inferences: int) -> str:
    options = run["options"]
    facts = [
        ("started", _when(run["started_at"])),
        ("finished", _when(run["finished_at"])),
        ("took", _duration(took)),
        ("calls", f"{len(run['calls'])}, of which {inferences} model inference{'s' * (inferences != 1)}"),
        ("spent", dollars(run["spent_usd"]) if run.get("spent_usd") else None),
        ("principal", options.get("principal")),
        ("planc.toml", options.get("config")),
        ("policy", options.get("policy")),
        ("task", (options.get("planned") or {}).get("task")),
        ("finish", options.get("finish") if options.get("finish") not in (None, "output") else None),
        ("query", options.get("query")),
    ]
    listed = "".join(f"<dt>{escape(name)}</dt><dd>{escape(str(value))}</dd>" for name, value in facts if value is not None)
    message = f'<p class="message" id="run-message">{escape(run["message"])}</p>' if run["message"] else ""
    status = escape(run["status"])
    return (
        f'<header><h1>Run <code id="run-id">{escape(run["id"])}</code> '
        f'<span class="status {status}" id="run-status">{status}</span></h1>'
        f'<dl class="facts">{listed}</dl>{message}</header>'
    )


def _section(anchor: str, heading: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(heading)}</h2>{body}</section>'


def _timeline(found: list[Row], start: float, end: float) -> str:
    if not found:
        return "<p>No step started and no call was made.</p>"
    total = max(end - start, 1e-9)
    scale = (
        f'<div class="scale"><span>step or call</span><span class="took">took</span>'
        f'<span class="ends"><span>0</span><span>{escape(_duration(end - start))}</span></span></div>'
    )
    return scale + "".join(_row(row, start, end, total) for row in found)


def _row(row: Row, start: float, end: float, total: float) -> str:
    ended = row_outcome(row)
    classes = ["row", "inference" if row.is_inference else "step" if row.is_step else "call"]
    if ended not in ("ok", "unfinished", "unknown"):
        classes.append("failed")  # failed, or however else the record says a call went wrong
    if row.finished is None:
        classes.append("unfinished")
    left = (row.started - start) / total * 100
    width = ((row.finished if row.finished is not None else end) - row.started) / total * 100
    took = _duration(row.took) if row.took is not None else "did not finish"
    opened = " open" if "failed" in classes else ""  # what went wrong shows without a click
    name = (
        f'<span class="name" style="padding-left:{row.depth * 1.2:.1f}rem"><span class="path">'
        f'{escape(row.path)}</span> <span class="tool">{escape(row.tool)}</span></span>'
    )
    bar = f'<span class="track"><span class="bar" style="left:{left:.2f}%;width:{width:.2f}%"></span></span>'
    return (
        f'<details class="{" ".join(classes)}"{opened} data-step="{escape(row.path)}" '
        f'data-tool="{escape(row.tool)}" data-outcome="{escape(ended)}">'
        f'<summary>{name}<span class="took">{escape(took)}</span>{bar}</summary>'
        f'<div class="body">{_row_body(row, ended)}</div></details>'
    )


def _row_body(row: Row, ended: str) -> str:
    call = row.call
    if call is None:
        if row.error is not None:
            return "<h3>error</h3>" + f'<pre class="error">{_text(row.error)}</pre>'
        if row.finished is None:
            return "<p>It did not finish: the run stopped while it ran (the run's message says why).</p>"
        return "<h3>result</h3>" + _value(row.result)
    body = [f"<p>{escape(_when(call['started_at'], precise=True))}, {escape(ended)}</p>"]
    if row.is_inference:
        body.append(f'<p><a href="#inference-{call["sequence"]}">the conversation</a></p>')
    else:
        body += ["<h3>input</h3>", _value(call["input"]), _labels(call.get("labels"))]
    if call["error"] is not None:
        body += ["<h3>error</h3>", f'<pre class="error">{_text(call["error"])}</pre>']
    elif call["finished_at"] is None:
        body.append("<p>No result was recorded: the run stopped during the call.</p>")
    elif row.is_inference:
        body += ["<h3>reply</h3>", _reply(call["output"])]
    else:
        body += ["<h3>result</h3>", _value(call["output"])]
    return "".join(body)


def _labels(labels: dict | None) -> str:
    """Where the call's values came from, as the record keeps it: each labelled argument, what decided that
    it ran, and whether a person let it through."""
    if not labels:
        return ""
    items = [
        f"<li><code>{escape(name)}</code>: {escape(', '.join(found))}</li>"
        for name, found in labels.get("sources", {}).items()
        if found
    ]
    if labels.get("control"):
        items.append(f"<li>whether it ran: {escape(', '.join(labels['control']))}</li>")
    if "flagged" in labels:
        decided = "let through by a person" if labels.get("approved") else "not let through"
        items.append(f'<li class="flagged">{decided}: {escape(labels["flagged"])}</li>')
    return f'<h3>labels</h3><ul class="labels">{"".join(items)}</ul>' if items else ""


def _inference(row: Row) -> str:
    """A model inference: the conversation sent (each message's role and text), the tools offered and the reply."""
    call = row.call
    assert call is not None  # an inference is recorded as a call
    asked = call["input"] if isinstance(call["input"], dict) else {}
    turns = "".join(
        f'<div class="message-turn"><span class="role">{escape(str(message.get("role", "?")))}</span>'
        f"<pre>{_text(_content(message))}</pre></div>"
        for message in asked.get("messages", ())
        if isinstance(message, dict)
    )
    offered = asked.get("tools") or []
    tools = f"<p>tools offered: {escape(', '.join(map(str, offered)))}</p>" if offered else ""
    if call["error"] is not None:
        answer = f'<h3>error</h3><pre class="error">{_text(call["error"])}</pre>'
    elif call["finished_at"] is None:
        answer = "<p>No reply was recorded: the run stopped during the inference.</p>"
    else:
        answer = "<h3>reply</h3>" + _reply(call["output"])
    return (
        f'<article class="inference" id="inference-{call["sequence"]}"><h3>step {escape(row.path)}, '
        f"{escape(call['tool'])}</h3>{turns}{tools}{answer}</article>"
    )


def _content(message: dict) -> str:
    """A message's text: its content, and the tool calls it asked for, if any."""
    content = message.get("content")
    text = content if isinstance(content, str) else "" if content is None else json.dumps(content, indent=2)
    asked = message.get("tool_calls")
    return text + (("\n" if text else "") + "tool calls: " + json.dumps(asked, ensure_ascii=False) if asked else "")


def _reply(reply: object) -> str:
    if not isinstance(reply, dict):
        return _value(reply)
    calls = reply.get("tool_calls") or []
    text = f'<pre class="reply">{_text(reply.get("content") or "")}</pre>' if reply.get("content") else ""
    asked = "".join(
        f"<p>calls <code>{escape(str(call.get('name')))}</code></p>{_value(call.get('arguments'))}"
        for call in calls
        if isinstance(call, dict)
    )
    return (text + asked) or _value(reply)


def _plan(stored: dict | None) -> str:
    if not stored or not isinstance(stored.get("source"), str):
        return "<p>No plan was recorded (a model was still writing it).</p>"
    lines = stored["source"].rstrip("\n").split("\n")
    return '<ol class="source">' + "".join(f"<li>{_text(line) or ' '}</li>" for line in lines) + "</ol>"


def _value(value: object) -> str:
    return f"<pre>{_text(json.dumps(value, indent=2, ensure_ascii=False, default=str))}</pre>"


def _text(text: str) -> str:
    """`text` escaped for HTML, cut at SHOWN characters."""
    if len(text) > SHOWN:
        text = text[:SHOWN] + f"\n... ({len(text) - SHOWN:,} more characters: `planc show-run --format json` has them)"
    return escape(text)


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms" if seconds < 0.01 else f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _when(timestamp: float | None, precise: bool = False) -> str:
    if not timestamp:
        return "-"
    shown = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))
    return f"{shown}.{int(timestamp % 1 * 1000):03d}" if precise else shown

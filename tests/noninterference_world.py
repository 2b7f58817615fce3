"""The project the non-interference properties run their plans in: labelled tools answering from a
world.

A world is a table: for each call of a labelled tool, keyed by the tool, its canonical arguments and
how many such calls came before it (none for `vault`, declared deterministic), what the call returns
or the error text it raises. The table is
never written out: each entry is drawn, when the call is made, from a generator seeded by the
world's seed for the entry's kind and by the key. An entry's kind is its tool's label (`untrusted`,
`secret`, or trusted), and within a result, a part under an `x-labels: ["untrusted"]` is drawn from
the untrusted seed. So two worlds with the same trusted and secret seeds are U-equivalent (they
differ only in what untrusted tools and parts return: values, list lengths, whether a call fails and
with what text), and two with the same trusted and untrusted seeds are S-equivalent (secret values
drawn independently, of any length). `recent` is a trusted tool that repeats the vault's last code:
its declaration loses the secret's label, so what it returns is a secret only its value shows. The
effectful tools (`send`, `post`) return without reading the
world.

Secrets are made of letters no other value holds (Cyrillic and Greek capitals, and sometimes a
quote, a backslash and a newline), so a secret that reached some text is seen there.
"""

from __future__ import annotations

TOOLS = r"""
import json, random

WORLD = {"seeds": {"untrusted": 0, "trusted": 0, "secret": 0}, "counts": {}}
PLAIN = "abcdefghijklmnopqrstuvwxyz"
SECRET = "ЖЗИЙКЛМНПФЦЧШЩЭЮЯΔΘΛΞΠΣΦΨΩ"


DETERMINISTIC = {"vault"}  # declared so: its answer is its arguments' alone


def _key(tool, args):
    key = (tool, json.dumps(args, sort_keys=True, ensure_ascii=False))
    n = WORLD["counts"].get(key, 0)
    WORLD["counts"][key] = n + 1
    return f"{key[0]}|{key[1]}|{0 if tool in DETERMINISTIC else n}"


def _rng(kind, key, part):
    return random.Random(f"{WORLD['seeds'][kind]}|{key}|{part}")


def _word(rng, prefix):
    return prefix + "".join(rng.choice(PLAIN) for _ in range(rng.randint(3, 6)))


def _secret(rng):
    text = "".join(rng.choice(SECRET) for _ in range(rng.randint(16, 24)))
    if rng.random() < 0.3:
        text += '"\\\n' + "".join(rng.choice(SECRET) for _ in range(3))
    return text


def _fails(kind, key):
    rng = _rng(kind, key, "fails")
    if rng.random() < 0.2:
        raise RuntimeError(f"{_word(rng, 'err')} {rng.randint(0, 99)} {_word(rng, 'err')}")


def _record(kind, key, part):
    rng = _rng(kind, key, part)
    return {"text": _word(rng, "w"), "n": rng.randint(0, 9), "flag": rng.random() < 0.5,
            "items": [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]}


def inbox(folder):
    key = _key("inbox", {"folder": folder})
    _fails("untrusted", key)
    rng = _rng("untrusted", key, "length")
    return [{k: v for k, v in _record("untrusted", key, i).items() if k != "items"} for i in range(rng.randint(0, 3))]


def fetch(id):
    key = _key("fetch", {"id": id})
    _fails("untrusted", key)
    return _record("untrusted", key, "")


def lookup(key):
    entry = _key("lookup", {"key": key})
    if _rng("trusted", entry, "fails").random() < 0.2:
        raise KeyError(f"no entry for {key!r}")  # quotes its argument, a secret one too
    return _record("trusted", entry, "")


def vault(name):
    key = _key("vault", {"name": name})
    rng = _rng("secret", key, "")
    code = _secret(rng)
    WORLD["recent"] = code
    return {"code": code, "pin": rng.randint(0, 999999)}


def recent():
    return {"text": WORLD.get("recent") or "none yet"}


def _entry(key, part, kind):
    rng = _rng(kind, key, part)
    memo = _rng("untrusted", key, part + "memo")
    return {"iban": "DE" + "".join(str(rng.randint(0, 9)) for _ in range(8)), "memo": _word(memo, "m")}


def account(id):
    key = _key("account", {"id": id})
    untrusted = _rng("untrusted", key, "")
    history = [_entry(key, f"h{i}", "untrusted") for i in range(untrusted.randint(0, 3))]
    return {"owner": _entry(key, "owner", "trusted"), "history": history,
            "note": _word(untrusted, "n") if untrusted.random() < 0.5 else None}


def send(to, amount):
    return {"sent": True}


def post(text):
    return {"posted": True}
"""

# `account` is trusted, but others write the memo of each entry and the whole history: its schema
# says so the way generators write schemas, with `$ref`, `$defs`, the combinators and `items`.
ACCOUNT = (
    '{ "$defs" = { memo = { type = "string", x-labels = ["untrusted"] }, '
    'entry = { type = "object", properties = { iban = { type = "string" }, memo = { "$ref" = "#/$defs/memo" } } }, '
    'history = { type = "array", x-labels = ["untrusted"], items = { "$ref" = "#/$defs/entry" } } }, '
    'type = "object", properties = { owner = { allOf = [{ "$ref" = "#/$defs/entry" }] }, '
    'history = { "$ref" = "#/$defs/history" }, '
    'note = { anyOf = [{ type = "string", x-labels = ["untrusted"] }, { type = "null" }] } } }'
)
RECORD = (
    '{ type = "object", properties = { text = { type = "string" }, n = { type = "integer" }, '
    'flag = { type = "boolean" }, items = { type = "array", items = { type = "integer" } } } }'
)
MAIL = (
    '{ type = "array", items = { type = "object", properties = { text = { type = "string" }, '
    'n = { type = "integer" }, flag = { type = "boolean" } } } }'
)

TOML = (
    """
policy = "policy.cedar"

[tools.inbox]
provider = "python:{module}:inbox"
params = {{ folder = {{ type = "string" }} }}
required = ["folder"]
returns = """
    + MAIL.replace("{", "{{").replace("}", "}}")
    + """
labels = ["untrusted"]
effects = {{ read_only = true }}

[tools.fetch]
provider = "python:{module}:fetch"
params = {{ id = {{ type = "integer" }} }}
required = ["id"]
returns = """
    + RECORD.replace("{", "{{").replace("}", "}}")
    + """
labels = ["untrusted"]
effects = {{ read_only = true }}

[tools.lookup]
provider = "python:{module}:lookup"
params = {{ key = {{ type = "string" }} }}
required = ["key"]
returns = """
    + RECORD.replace("{", "{{").replace("}", "}}")
    + """
labels = []
effects = {{ read_only = true }}

[tools.vault]
provider = "python:{module}:vault"
params = {{ name = {{ type = "string" }} }}
required = ["name"]
returns = {{ type = "object", properties = {{ code = {{ type = "string" }}, pin = {{ type = "integer" }} }} }}
labels = ["secret"]
effects = {{ read_only = true, deterministic = true }}

[tools.account]
provider = "python:{module}:account"
params = {{ id = {{ type = "integer" }} }}
required = ["id"]
returns = """
    + ACCOUNT.replace("{", "{{").replace("}", "}}")
    + """
labels = []
effects = {{ read_only = true }}

# Declared trusted, `recent` repeats the vault's last code, as a cache or a log would: a label lost
# on the way, which only the redaction's by-value backstop catches.
[tools.recent]
provider = "python:{module}:recent"
returns = {{ type = "object", properties = {{ text = {{ type = "string" }} }} }}
labels = []
effects = {{ read_only = true }}

[tools.send]
provider = "python:{module}:send"
params = {{ to = {{ type = "string" }}, amount = {{ type = "integer" }} }}
required = ["to", "amount"]
labels = []

[tools.post]
provider = "python:{module}:post"
params = {{ text = {{ type = "string" }} }}
required = ["text"]
pipe = "text"
labels = []
effects = {{ read_only = false, destructive = false }}

[plans.sub]
file = "sub.plan"
params = {{ k = {{ type = "integer" }} }}
"""
)

# Untrusted data may not choose a payment's recipient, nor decide that a post is made, nor write in
# it: such a call is flagged, and waits for a person (the runs are checked with approvals). What the
# policy lets through is what planc says is sound: a recipient chosen among trusted items (never
# reported for `send`, which may destroy), a post's words chosen so, a post decided by one yes or no.
POLICY = """
@id("untrusted-recipient")
forbid(principal, action, resource == Tool::"send")
  when { context.sources has to && context.sources.to.contains("untrusted") &&
         !(context.chosen_by has to && context.chosen_by.to.contains("untrusted")) };

@id("untrusted-posts")
forbid(principal, action, resource == Tool::"post") when { context.control.contains("untrusted") && !context.one_bit };

@id("untrusted-words")
forbid(principal, action, resource == Tool::"post") when { context.unchosen_labels.contains("untrusted") };

permit(principal, action, resource);
"""

EFFECTFUL = ("send", "post")

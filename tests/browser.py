"""A real browser for the tests of HTML planc writes: headless Chromium, kept off the network.

- `CHROMIUM`: the browser's executable, or None (the Debian package `chromium`; .ci/run installs it);
  `needs_chromium` skips a test without it, saying so.
- `loaded_dom(page)`: the DOM after Chromium has loaded the file `page` and run whatever it
  would run, parsed into `Element`s (`find`, `find_all`, `text`).
- `screenshot(page, png)`: what a person would see, for a look by eye; no test looks, a person does:
  `.venv/bin/python tests/browser.py run.html run.png`.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
)
HANG_GUARD_S = 120

# No network, no first-run or sync traffic, no updates, a fresh profile: nothing but the file.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-default-apps",
)


def _chromium(*args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="planc-chromium-") as profile:
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=HANG_GUARD_S
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def loaded_dom(page: Path) -> Element:
    """The document Chromium built from `page`, once loaded (its scripts, if it had any, run)."""
    return parse_html(_chromium("--dump-dom", page.resolve().as_uri()))


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1600) -> None:
    _chromium(f"--screenshot={png}", f"--window-size={width},{height}", "--hide-scrollbars", page.resolve().as_uri())


class Element:
    def __init__(self, tag: str, attributes: dict[str, str | None]) -> None:
        self.tag, self.attributes = tag, attributes
        self.children: list[Element | str] = []

    @property
    def classes(self) -> list[str]:
        return (self.attributes.get("class") or "").split()

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)

    def find_all(self, tag: str | None = None, class_: str | None = None, **attributes: str) -> list[Element]:
        """Every element below this one with that tag, class and attributes (`data_step=` for data-step)."""
        found = []
        for child in self.children:
            if isinstance(child, str):
                continue
            wanted = {name.replace("_", "-"): value for name, value in attributes.items()}
            if (
                (tag is None or child.tag == tag)
                and (class_ is None or class_ in child.classes)
                and all(child.attributes.get(name) == value for name, value in wanted.items())
            ):
                found.append(child)
            found += child.find_all(tag, class_, **attributes)
        return found

    def find(self, tag: str | None = None, class_: str | None = None, **attributes: str) -> Element:
        found = self.find_all(tag, class_, **attributes)
        assert len(found) == 1, f"{len(found)} elements <{tag} class={class_} {attributes}>"
        return found[0]


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.open = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs))
        self.open[-1].children.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_endtag(self, tag):
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                del self.open[depth:]
                return

    def handle_data(self, data):
        self.open[-1].children.append(data)


def parse_html(text: str) -> Element:
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


if __name__ == "__main__":
    import sys

    screenshot(Path(sys.argv[1]), Path(sys.argv[2]).resolve())

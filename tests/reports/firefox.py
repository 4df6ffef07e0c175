"""Debian's Firefox ESR, driven over WebDriver BiDi, for the report tests and
``benchmarks/bench_reports.py``: the report must work from ``file://`` in Firefox as well as
in Chromium, and Firefox differs where it matters (a ``file:`` page is an opaque origin, so
only the nonce lets its scripts run).

Playwright drives a stock Firefox only through BiDi commands newer than the ESR has (1.65
asks for ``emulation.setMediaFeaturesOverride``, which ESR 153 does not know), and
geckodriver is not packaged: so this speaks BiDi itself, over the ``websockets`` library. It
is a small subset: a session, tabs, navigation, script calls and real pointer clicks
(``input.performActions``). What a page did wrong is collected in the page itself by a preload
script, which runs before the page's own: script errors, Content-Security-Policy violations,
elements whose file failed to load, and every file an element loaded (inline ``data:`` aside).
``file:`` loads are not network requests, so BiDi's network events do not see them; any
http(s) request they do see is kept as well: a report makes none.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

#: how long Firefox may take to start and each command to answer (generous: a loaded CI
#: machine; the tests assert behaviour, never time)
START_TIMEOUT_S = 60.0
COMMAND_TIMEOUT_S = 120.0
READY = "html[data-ready='true']"  # the page's script has its case index and listens
#: no first-run pages, no telemetry, no updates: the remote agent's own recommended
#: preferences cover most of the background traffic, these the rest
PREFS = {
    "browser.shell.checkDefaultBrowser": False,
    "browser.aboutwelcome.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "app.update.disabledForTesting": True,
    "browser.safebrowsing.update.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
}
#: installed in every tab before the page's scripts run (see the module docstring)
WATCH = """() => {
  const seen = window.__tearline = {problems: [], loaded: []};
  window.addEventListener("error", (e) => {
    if (e.target === window) seen.problems.push(`error: ${e.message}`);
    else seen.problems.push(`failed: ${e.target.src || e.target.href}`);
  }, true);
  window.addEventListener("unhandledrejection",
    (e) => seen.problems.push(`rejection: ${e.reason}`));
  document.addEventListener("securitypolicyviolation",
    (e) => seen.problems.push(`csp: ${e.violatedDirective} ${e.blockedURI}`));
  new MutationObserver((records) => {
    for (const record of records)
      for (const node of record.addedNodes) {
        const url = node.src || (node.tagName === "LINK" && node.href);
        if (url && !url.startsWith("data:")) seen.loaded.push(url);
      }
  }).observe(document, {childList: true, subtree: true});
}"""
#: resolves once ``selector`` matches, or rejects after ``timeout`` ms (checked every frame)
WAIT_FOR = """({selector, timeout}) => new Promise((resolve, reject) => {
  const start = performance.now();
  const look = () => {
    if (document.querySelector(selector) !== null) resolve(true);
    else if (performance.now() - start > timeout)
      reject(new Error(`no ${selector} after ${timeout} ms`));
    else requestAnimationFrame(look);
  };
  look();
})"""


class BidiError(AssertionError):
    """Firefox answered a command with an error, or a page's script threw."""


class Firefox:
    """A headless Firefox and its BiDi session: ``command`` and ``new_tab``."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.next_id = 0
        #: events received while waiting for an answer (network requests)
        self.events: list[dict[str, Any]] = []

    def command(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command; its result (events that arrive first are kept)."""
        self.next_id += 1
        sent = self.next_id
        self.socket.send(json.dumps({"id": sent, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=COMMAND_TIMEOUT_S))
            if message.get("type") == "event":
                self.events.append(message)
            elif message.get("id") == sent:
                if message.get("type") == "error":
                    raise BidiError(f"{method}: {message.get('error')}: {message.get('message')}")
                result: dict[str, Any] = message["result"]
                return result

    def new_tab(self) -> Tab:
        context = self.command("browsingContext.create", type="tab")["context"]
        return Tab(self, context)

    def requests(self, context: str) -> list[str]:
        """The URLs of the network requests one tab made (``file:`` loads are not among them,
        and ``data:`` URLs are inline, not requests: a report's icon is ``data:,``)."""
        return [
            url
            for event in self.events
            if event.get("method") == "network.beforeRequestSent"
            and event["params"].get("context") == context
            and not (url := event["params"]["request"]["url"]).startswith("data:")
        ]


class Tab:
    """One tab: navigation, script calls (``evaluate``, as Playwright's function form) and
    the few user actions the report tests make."""

    def __init__(self, browser: Firefox, context: str) -> None:
        self.browser, self.context = browser, context

    def goto(self, url: str, *, ready: bool = True) -> None:
        """Load ``url`` to its load event; then (``ready``) wait for the report's script."""
        navigate = {"context": self.context, "url": url, "wait": "complete"}
        self.browser.command("browsingContext.navigate", **navigate)
        if ready:
            self.wait_for(READY)

    def evaluate(self, function: str, arg: Any = None) -> Any:
        """``function(arg)`` in the page, awaited; its result through JSON (None for undefined)."""
        wrapped = f"async (text) => JSON.stringify(await ({function})(JSON.parse(text)))"
        answer = self.browser.command(
            "script.callFunction",
            functionDeclaration=wrapped,
            arguments=[{"type": "string", "value": json.dumps(arg)}],
            target={"context": self.context},
            awaitPromise=True,
        )
        if answer["type"] == "exception":
            raise BidiError(answer["exceptionDetails"]["text"])
        value = answer["result"]
        return json.loads(value["value"]) if value["type"] == "string" else None

    def wait_for(self, selector: str, timeout_ms: float = COMMAND_TIMEOUT_S * 500) -> None:
        self.evaluate(WAIT_FOR, {"selector": selector, "timeout": timeout_ms})

    def text(self, selector: str) -> str | None:
        got = self.evaluate("(s) => document.querySelector(s)?.textContent ?? null", selector)
        return None if got is None else str(got)

    def texts(self, selector: str) -> list[str]:
        every = "(s) => [...document.querySelectorAll(s)].map((e) => e.textContent)"
        return list(self.evaluate(every, selector))

    def count(self, selector: str) -> int:
        return int(self.evaluate("(s) => document.querySelectorAll(s).length", selector))

    def click(self, selector: str) -> None:
        """A real mouse click (BiDi input actions) on the middle of ``selector``'s element,
        scrolled into view first."""
        found = self.browser.command(
            "script.callFunction",
            functionDeclaration="(s) => { const e = document.querySelector(s); "
            "e?.scrollIntoView({block: 'center'}); return e; }",
            arguments=[{"type": "string", "value": selector}],
            target={"context": self.context},
            awaitPromise=False,
        )
        node = found.get("result", {})
        if node.get("type") != "node":
            raise BidiError(f"nothing to click: {selector}")
        element = {"type": "element", "element": {"sharedId": node["sharedId"]}}
        mouse = [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": element},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0},
        ]
        actions = [{"type": "pointer", "id": "mouse", "actions": mouse}]
        self.browser.command("input.performActions", context=self.context, actions=actions)

    def fill(self, selector: str, text: str) -> None:
        """Set an input's value and tell the page, as Playwright's ``fill`` does."""
        self.evaluate(
            "({selector, text}) => { const e = document.querySelector(selector); e.focus(); "
            "e.value = text; e.dispatchEvent(new Event('input', {bubbles: true})); }",
            {"selector": selector, "text": text},
        )

    def problems(self) -> list[str]:
        """Script errors, policy violations and failed loads the page had (see ``WATCH``)."""
        return list(self.evaluate("() => window.__tearline.problems"))

    def loaded(self) -> list[str]:
        """The files elements of the page loaded, in order (see ``WATCH``)."""
        return list(self.evaluate("() => window.__tearline.loaded"))

    def requests(self) -> list[str]:
        """The network requests this tab made (``Firefox.requests``)."""
        return self.browser.requests(self.context)

    def close(self) -> None:
        self.browser.command("browsingContext.close", context=self.context)


@contextlib.contextmanager
def firefox(profile: Path, executable: str) -> Iterator[Firefox]:
    """A headless Firefox on its own profile folder, with a BiDi session that sees console
    entries and network requests, and ``WATCH`` in every tab."""
    profile.mkdir(parents=True, exist_ok=True)
    lines = [f"user_pref({json.dumps(k)}, {json.dumps(v)});" for k, v in PREFS.items()]
    (profile / "user.js").write_text("\n".join(lines) + "\n")
    argv = [executable, "--headless", "--no-remote", "--profile", str(profile)]
    argv += ["--remote-debugging-port", "0"]  # the OS picks the port; Firefox prints it
    env = {**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"}
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        url = _bidi_url(process)
        with connect(f"{url}/session", max_size=None, open_timeout=START_TIMEOUT_S) as socket:
            browser = Firefox(socket)
            browser.command("session.new", capabilities={})
            browser.command("session.subscribe", events=["network.beforeRequestSent"])
            browser.command("script.addPreloadScript", functionDeclaration=WATCH)
            yield browser
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _bidi_url(process: subprocess.Popen[str]) -> str:
    """The WebSocket address Firefox prints on stderr once it listens; its later output is
    drained by a thread, so that Firefox never blocks on a full pipe."""
    said: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            said.put(line)
        said.put(None)

    threading.Thread(target=read, daemon=True).start()
    tail: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            line = said.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            raise BidiError(f"Firefox did not start its BiDi server: {''.join(tail[-5:])}")
        if found := re.search(r"WebDriver BiDi listening on (ws://\S+)", line):
            return found[1]
        tail.append(line)

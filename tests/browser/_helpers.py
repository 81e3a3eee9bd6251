"""Helpers the browser tests share (the browser, page and researcher fixtures are in conftest.py)."""

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

USERNAME, PASSWORD = "ada", "tool-use-2026"


def in_thread(fn, **kwargs):
    """Write rows off the main thread: Playwright's event loop runs there, and publishing run
    events after the commit uses async_to_sync, which refuses a thread with a running loop.

    The thread hands its database connection back before it ends, as every thread that queries
    must: a pooled connection that is never closed is never returned to the pool."""
    from django.db import connections

    def run():
        try:
            return fn(**kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def log_in(page, live_server, path: str = "/", *, lands_on: str | None = None, wait_for: str | None = None) -> None:
    """Open `path` as an anonymous visitor (sent to the login form), log in as the researcher, and
    wait to land on `lands_on` (default: `path`) or, given `wait_for`, for that selector."""
    page.goto(f"{live_server.url}{path}")
    assert "/accounts/login/" in page.url
    page.fill("input[name=username]", USERNAME)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    if wait_for:
        page.wait_for_selector(wait_for)
        # The selector is there as soon as the HTML is parsed, possibly before the stylesheets: a test measuring the
        # layout then read rows before and after the styles applied (tests/browser/test_rollout_groups.py, CI of
        # f8f35dd: two rows 20 px apart below six 30 px apart).
        page.wait_for_load_state("load")
    else:
        page.wait_for_url(f"{live_server.url}{lands_on or path}")


def screenshot(page, name: str) -> None:
    """Save a full-page screenshot into $TIRLAB_SCREENSHOT_DIR when it is set (make screenshot)."""
    shots = os.environ.get("TIRLAB_SCREENSHOT_DIR")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / name), full_page=True)


# WCAG 2.x contrast of an element's text against what lies behind it: the background colours of
# the element and its ancestors, composited up to the first opaque one (the page's canvas if none).
_CONTRAST_JS = """
element => {
  const parse = value => {
    const m = value.match(/^rgba?\\(([\\d.]+),? ([\\d.]+),? ([\\d.]+)(?:[,\\/] ?([\\d.]+%?))?\\)$/);
    if (!m) throw new Error(`unsupported colour ${value}`);
    const alpha = m[4] === undefined ? 1 : m[4].endsWith("%") ? parseFloat(m[4]) / 100 : parseFloat(m[4]);
    return [+m[1], +m[2], +m[3], alpha];
  };
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat(1);
  const layers = [];
  for (let node = element; node; node = node.parentElement) {
    const colour = parse(getComputedStyle(node).backgroundColor);
    if (colour[3] > 0) layers.push(colour);
    if (colour[3] === 1) break;
  }
  let background = [255, 255, 255, 1];
  for (const layer of layers.reverse()) background = over(layer, background);
  const style = getComputedStyle(element);
  const text = over(parse(style.color), background);
  const linear = v => (v /= 255) <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const luminance = rgb => 0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2]);
  const [light, dark] = [luminance(text), luminance(background)].sort((a, b) => b - a);
  const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight, 10) >= 700;
  return {
    text: element.innerText.trim(),
    ratio: (light + 0.05) / (dark + 0.05),
    large: size >= 24 || (bold && size >= 18.66),
    color: style.color,
    background: `rgb(${background.slice(0, 3).map(Math.round).join(", ")})`,
  };
}
"""


def assert_readable(page, *selectors: str) -> None:
    """Each selector names one element the user must be able to use: it is visible, has text, and
    that text meets WCAG AA contrast against its background (4.5:1, or 3:1 for large text)."""
    for selector in selectors:
        element = page.locator(selector)
        assert element.count() == 1, f"{selector}: {element.count()} elements, expected 1"
        assert element.is_visible(), f"{selector} is not visible"
        found = element.evaluate(_CONTRAST_JS)
        assert found["text"], f"{selector} has no text"
        needed = 3.0 if found["large"] else 4.5
        assert found["ratio"] >= needed, (
            f"{selector} ({found['text']!r}): contrast {found['ratio']:.2f} < {needed}"
            f" ({found['color']} on {found['background']}, theme {theme(page)})"
        )


def theme(page) -> str:
    return page.evaluate("document.documentElement.dataset.theme")


def toggle_theme(page) -> None:
    """Switch theme the way a user does, with the toggle in the top bar."""
    before = theme(page)
    page.click("#theme-toggle")
    page.wait_for_function("before => document.documentElement.dataset.theme !== before", arg=before)


def assert_readable_in_both_themes(page, *selectors: str) -> None:
    """assert_readable in the theme the page opened in and in the other one; the page is left in
    the theme it opened in."""
    assert_readable(page, *selectors)
    toggle_theme(page)
    assert_readable(page, *selectors)
    toggle_theme(page)

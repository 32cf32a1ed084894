"""Remake docs/report.png: run the demo crawl, write its report, open it in headless Chromium and
photograph the drops table with an edited copy's diff open (its changed words highlighted).

    python scripts/report_screenshot.py [--out docs/report.png] [--chromium /usr/bin/chromium]

Needs playwright (the dev extra) and a Chromium on PATH (Debian's chromium; playwright's own
browser download is not used).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from crawler_dedup.demo.run import run_demo  # noqa: E402
from crawler_dedup.tools.report import write_report  # noqa: E402

WIDTH = 1280
ROWS = "#rows > tr.drop"


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def shoot(report: str, out: str, executable: str, height: int) -> str:
    """Open `report`, show the near drops, open the first diff that marks changed words, save `out`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": height})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"file://{os.path.abspath(report)}")
            page.wait_for_function("window.reportReady === true", timeout=10_000)
            page.select_option("#reason", "near")
            rows = page.locator(ROWS)
            picked = None
            # the edited wire copies first: their diffs mark single words, the clearest picture
            order = sorted(range(rows.count()), key=lambda i: "/wire/" not in rows.nth(i).locator("td.url").first.inner_text())
            for i in order:
                rows.nth(i).locator("td:nth-child(5)").click()  # a cell without a link
                if page.locator("#detail tr.chg ins").count() and page.locator("#detail tr.chg del").count():
                    picked = rows.nth(i)
                    break
            if picked is None:
                raise SystemExit("no near-duplicate row with changed words in the demo's report")
            # the controls and the rows above the open one at the top of the window, and within the
            # diff box the first changed sentence pair in sight
            page.evaluate("""() => {
                const controls = document.querySelector('.controls');
                window.scrollTo(0, window.scrollY + controls.getBoundingClientRect().top - 8);
                const box = document.getElementById('detail'), chg = box.querySelector('tr.chg');
                const below = chg.getBoundingClientRect().bottom - box.getBoundingClientRect().bottom;
                if (below > -20) box.scrollTop += below + 60;
            }""")
            bottom = page.evaluate("document.getElementById('detail').getBoundingClientRect().bottom")
            if bottom > height:
                raise SystemExit(f"the open diff ends at {bottom:.0f} px, below the {height} px window: "
                                 "give a larger --height")
            page.screenshot(path=out)
            if errors:
                raise SystemExit(f"the page raised: {errors}")
            return picked.locator("td.url").first.inner_text()
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "report.png"))
    ap.add_argument("--height", type=int, default=1000, help="window height in px (the width is 1280)")
    ap.add_argument("--chromium", default=chromium(), help="the Chromium binary (default: the one on PATH)")
    ap.add_argument("--keep", metavar="DIR", help="keep the demo's output and report.html in DIR (a new folder)")
    args = ap.parse_args(argv)
    if not args.chromium:
        ap.error("no chromium on PATH: install it (apt-get install chromium) or give --chromium")
    work = args.keep or tempfile.mkdtemp(prefix="crawler-dedup-shot-")
    try:
        demo = run_demo(os.path.join(work, "demo"))
        report = os.path.join(work, "report.html")
        write_report(demo.droplog, report, dir_=os.path.join(demo.out, "index"))
        url = shoot(report, args.out, args.chromium, args.height)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{args.out}: the report of the demo crawl, the diff of {url} open")
    return 0


if __name__ == "__main__":
    sys.exit(main())

// check.cjs loads one HTML file in headless Chromium through playwright-core
// and prints, as one JSON object on stdout, what cmd/crawler's browser tests
// assert on: console messages, page errors, dialogs, requests that left the
// file, the visible text, the size of every chart and the rows of the host
// and workers tables. It also writes a full-page screenshot. It judges nothing itself.
//
//   HORSESHOE_PLAYWRIGHT=/path/to/node_modules/playwright-core \
//   node check.cjs --chromium /usr/bin/chromium --page report.html \
//     --screenshot shot.png --profile DIR [--text TEXT]...
//
// --text TEXT reports whether TEXT occurs in the rendered, visible text
// (document.body.innerText: no hidden or collapsed content).
'use strict';

const path = require('path');

function parseArgs(argv) {
  const o = { texts: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i], v = argv[i + 1];
    if (v === undefined) throw new Error(`missing value for ${k}`);
    switch (k) {
      case '--chromium': o.chromium = v; break;
      case '--page': o.page = path.resolve(v); break;
      case '--screenshot': o.screenshot = v; break;
      case '--profile': o.profile = v; break;
      case '--text': o.texts.push(v); break;
      default: throw new Error(`unknown flag ${k}`);
    }
  }
  for (const k of ['chromium', 'page', 'screenshot', 'profile']) {
    if (!o[k]) throw new Error(`--${k} is required`);
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const pw = require(process.env.HORSESHOE_PLAYWRIGHT || 'playwright-core');
  const context = await pw.chromium.launchPersistentContext(o.profile, {
    executablePath: o.chromium,
    headless: true,
    timeout: 60000,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = { console: [], pageErrors: [], dialogs: [], requests: [], texts: {} };
  try {
    const page = context.pages()[0] || await context.newPage();
    page.on('console', (m) => out.console.push({ type: m.type(), text: m.text() }));
    page.on('pageerror', (e) => out.pageErrors.push(String(e && e.message || e)));
    page.on('dialog', async (d) => { out.dialogs.push({ type: d.type(), message: d.message() }); await d.dismiss(); });
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith('file:') && !u.startsWith('data:')) out.requests.push(u);
    });
    const url = 'file://' + o.page;
    await page.goto(url, { waitUntil: 'load', timeout: 60000 });
    // Give late errors (a script, a failed resource) a moment to surface.
    await page.waitForTimeout(300);
    Object.assign(out, await page.evaluate(() => {
      const box = (el) => { const r = el.getBoundingClientRect(); return { width: r.width, height: r.height }; };
      const text = (el) => (el ? (el.innerText ?? el.textContent ?? '').trim() : '');
      return {
        title: document.title,
        h1: text(document.querySelector('h1')),
        bodyText: document.body.innerText,
        scripts: document.scripts.length,
        cards: [...document.querySelectorAll('#summary .card')].map((c) => ({
          label: text(c.querySelector('.label')), value: text(c.querySelector('.value')), ...box(c),
        })),
        charts: [...document.querySelectorAll('svg[id]')].map((s) => ({
          id: s.id,
          title: text(s.querySelector('title')),
          shapes: s.querySelectorAll('rect, polyline, circle').length,
          curves: [...s.querySelectorAll('polyline')].map((p) => ({
            class: p.getAttribute('class') ?? '', stroke: getComputedStyle(p).stroke,
            dash: getComputedStyle(p).strokeDasharray, ...box(p),
          })),
          ...box(s),
        })),
        hostRows: [...document.querySelectorAll('#hosts table tbody tr')].map((tr) => [...tr.cells].map((td) => td.innerText.trim())),
        workerRows: [...document.querySelectorAll('#workers table tr')].map((tr) => [...tr.cells].map((td) => td.innerText.trim())),
        clusters: document.querySelectorAll('#clusters details').length,
        scrollWidth: document.documentElement.scrollWidth,
        clientWidth: document.documentElement.clientWidth,
      };
    }));
    for (const t of o.texts) out.texts[t] = out.bodyText.includes(t);
    await page.screenshot({ path: o.screenshot, fullPage: true });
  } finally {
    await context.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(`check.cjs: ${e && e.stack || e}\n`);
  process.exit(1);
});

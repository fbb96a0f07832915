// Opens every page of the reports in Debian's headless Chromium through playwright-core: a
// static export (written by aw_browser_site, served by a tiny static file server on 127.0.0.1
// that sends the collector's Content-Security-Policy), or a live collector described by a
// manifest (live_site.py). Fails on any failed request, console error, dialog or script, image
// that did not load, missing table row, missing text, wrong cell verdict, broken link or link
// that leads elsewhere when clicked; keeps a screenshot of each page.
// Usage: node check_pages.js --modules DIR --out DIR [--chromium PATH]
//                            (--site-bin PATH | --live-manifest FILE)
'use strict';

const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

function parseArgs(argv) {
  const args = { chromium: '/usr/bin/chromium' };
  for (let i = 2; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (argv[i + 1] === undefined) throw new Error(`missing value for ${argv[i]}`);
    args[key] = argv[i + 1];
  }
  for (const need of ['modules', 'out']) {
    if (!args[need]) throw new Error(`missing --${need}`);
  }
  if (!args.siteBin === !args.liveManifest) {
    throw new Error('give one of --site-bin and --live-manifest');
  }
  return args;
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

// A static file server for `root`: files only, no listing, nothing outside root.
function serve(root, csp) {
  const server = http.createServer((req, res) => {
    let rel;
    try {
      rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch (e) {
      res.writeHead(400).end();
      return;
    }
    if (rel.endsWith('/')) rel += 'index.html';
    const file = path.join(root, path.normalize(rel));
    if (!file.startsWith(root + path.sep)) {
      res.writeHead(403).end();
      return;
    }
    fs.readFile(file, (err, data) => {
      if (err) {
        res.writeHead(404).end();
        return;
      }
      const headers = { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' };
      if (file.endsWith('.html')) headers['Content-Security-Policy'] = csp;
      res.writeHead(200, headers).end(data);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function main() {
  const args = parseArgs(process.argv);
  const { chromium } = require(path.join(path.resolve(args.modules), 'playwright-core'));
  const out = path.resolve(args.out);
  const site = path.join(out, 'site');
  const shots = path.join(out, 'screenshots');
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(shots, { recursive: true });

  let manifest;
  let server = null;
  let base;
  if (args.liveManifest) {
    manifest = JSON.parse(fs.readFileSync(args.liveManifest, 'utf8'));
    base = manifest.base;
  } else {
    execFileSync(args.siteBin, [site], { stdio: 'inherit' });
    manifest = JSON.parse(fs.readFileSync(path.join(site, 'manifest.json'), 'utf8'));
    server = await serve(site, manifest.csp);
    base = `http://127.0.0.1:${server.address().port}/`;
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'aw-chromium-'));
  const problems = [];
  let context;

  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: args.chromium,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--disable-quic'],
      viewport: { width: 1280, height: 900 },
      timeout: 60000,
    });
    const page = context.pages()[0] || await context.newPage();
    let current = '';
    page.on('requestfailed', (r) => {
      const why = r.failure() && r.failure().errorText;
      problems.push(`${current}: request failed: ${r.url()} ${why}`);
    });
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${current}: HTTP ${r.status()} for ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') {
        problems.push(`${current}: console ${m.type()}: ${m.text()}`);
      }
    });
    page.on('pageerror', (e) => problems.push(`${current}: page error: ${e.message}`));
    page.on('dialog', async (d) => {
      problems.push(`${current}: a dialog opened: ${d.message()}`);
      await d.dismiss();
    });

    const links = new Set();
    for (const expected of manifest.pages) {
      current = expected.path;
      const response = await page.goto(base + expected.path, { waitUntil: 'load' });
      if (!response || response.status() !== 200) {
        problems.push(`${current}: status ${response && response.status()}`);
        continue;
      }
      const facts = await page.evaluate(() => ({
        scripts: document.getElementsByTagName('script').length,
        pwned: window.__awPwned !== undefined,
        text: document.body.innerText,
        images: Array.from(document.images).map((i) => ({
          src: i.getAttribute('src'), complete: i.complete, w: i.naturalWidth, h: i.naturalHeight,
        })),
        links: Array.from(document.querySelectorAll('a[href]')).map((a) => a.href),
        styled: getComputedStyle(document.querySelector('header')).display === 'flex',
      }));
      if (facts.scripts !== 0) problems.push(`${current}: ${facts.scripts} <script> elements`);
      if (facts.pwned) problems.push(`${current}: injected markup ran`);
      if (!facts.styled) problems.push(`${current}: the stylesheet was not applied (CSP hash?)`);
      if (facts.images.length !== expected.images) {
        problems.push(`${current}: ${facts.images.length} images, expected ${expected.images}`);
      }
      for (const img of facts.images) {
        if (!img.complete || img.w <= 0 || img.h <= 0) {
          problems.push(`${current}: image ${img.src} did not load (${img.w}x${img.h})`);
        }
      }
      for (const [selector, n] of Object.entries(expected.rows)) {
        const got = await page.locator(selector).count();
        if (got !== n) problems.push(`${current}: ${got} of '${selector}', expected ${n}`);
      }
      for (const text of expected.texts) {
        if (!facts.text.includes(text)) {
          problems.push(`${current}: text not shown: ${JSON.stringify(text)}`);
        }
      }
      // the verdict a cell's row shows in a host's section of a commit page
      for (const v of expected.verdicts || []) {
        const got = await page.evaluate(({ host, cell }) => {
          for (const sec of document.querySelectorAll('section.host')) {
            const a = sec.querySelector('h2 a');
            if (!a || a.textContent !== host) continue;
            for (const tr of sec.querySelectorAll('table.cells tbody tr')) {
              if (tr.cells[0].textContent === cell) return tr.cells[4].textContent;
            }
          }
          return null;
        }, v);
        if (got !== v.verdict) {
          problems.push(`${current}: ${v.host} ${v.cell}: verdict ${got}, expected ${v.verdict}`);
        }
      }
      for (const link of facts.links) links.add(link);
      const name = expected.path.replace(/\/?index\.html$/, '').replace(/[^A-Za-z0-9._-]/g, '_');
      const shot = path.join(shots, `${name || 'overview'}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      // a click on a link lands on the page it names
      for (const c of expected.clicks || []) {
        await Promise.all([page.waitForNavigation({ waitUntil: 'load' }),
          page.locator(c.selector).first().click()]);
        const h1 = await page.locator('h1').first().textContent();
        if (!h1.includes(c.h1)) problems.push(`${current}: ${c.selector} led to "${h1}"`);
        await page.goBack({ waitUntil: 'load' });
      }
    }

    // every link between pages (and to PNGs) stays on the site and resolves
    current = 'links';
    for (const link of links) {
      if (!link.startsWith(base)) {
        problems.push(`link leaves the site: ${link}`);
        continue;
      }
      const r = await context.request.get(link);
      if (r.status() !== 200) problems.push(`link ${link}: HTTP ${r.status()}`);
    }
    console.log(`checked ${manifest.pages.length} pages and ${links.size} links; ` +
      `screenshots in ${shots}`);
  } finally {
    if (context) await context.close();
    if (server) server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  if (problems.length) {
    for (const p of problems) console.error(`FAIL ${p}`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(`FAIL ${e.stack || e}`);
  process.exit(1);
});

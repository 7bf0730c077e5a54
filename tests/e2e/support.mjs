// What every end-to-end test shares: paths, Debian's headless Chromium, the ticket server, and a
// static server for dist/ alone.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, dirname, extname, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const artifacts = join(root, 'tests', 'e2e', 'artifacts');
mkdirSync(artifacts, { recursive: true });

/** Debian's Chromium, headless: Playwright cannot download browsers here, and the network is closed. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml', '.toml': 'text/plain; charset=utf-8' };

/** Serves the built app (dist/: the game, and the preview in dist/preview/) and nothing else: no API,
 * no ticket server. Resolves to its base URL. */
export function serveDist() {
  const dist = join(root, 'dist');
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    const file = join(dist, path.endsWith('/') ? `${path}index.html` : path);
    try {
      const body = await readFile(file);
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      response.end(body);
    } catch {
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('not found');
    }
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${server.address().port}` })));
}

/** What a player's first load fetches from dist/: the game's page and the files it names. */
export function firstLoadFiles() {
  const page = readFileSync(join(root, 'dist', 'index.html'), 'utf8');
  // What the page loads (its links and scripts, not where its anchors lead). Minified, the page leaves
  // its attribute values unquoted.
  const loaded = [...page.matchAll(/<(?:link|script)\b[^>]*>/g)].map(match => match[0]);
  const named = loaded.flatMap(tag => [...tag.matchAll(/(?:href|src)="?\/([^"\s>]+)/g)].map(match => match[1]));
  // And the JavaScript snippets the wasm-bindgen glue imports (see `scratch_zone`).
  const imported = named.filter(name => name.endsWith('.js'))
    .flatMap(glue => [...readFileSync(join(root, 'dist', glue), 'utf8').matchAll(/["'](?:\.\/)?(snippets\/[^"']+\.js)["']/g)].map(match => match[1]));
  return ['index.html', ...new Set([...named, ...imported])];
}

/** The server binary (release build). */
export const vegasBinary = join(root, 'target', 'release', 'vegas');

/**
 * The real ticket server (release build) serving dist/, on a fresh data directory (a first start makes
 * one block of 1 500 000 tickets, so it waits for /healthz), or on the PostgreSQL `database` when given.
 * `instance` picks another port, for several instances at once; `args` are more options of `serve`
 * (e.g. `--qa-deck FILE`); `demo: false` serves real money (no first emission is made: make one first);
 * `dataDir` serves an existing data directory, which `stop({ keep: true })`
 * leaves for the next server. Resolves to { base, adminBase (the back office), dataDir, stop }.
 */
export async function startTicketServer({ database, instance = 0, args = [], demo = true, dataDir = mkdtempSync(join(tmpdir(), 'vegas-e2e-')) } = {}) {
  const port = 18000 + (process.pid % 1000) * 3 + instance;
  const base = `http://127.0.0.1:${port}`;
  // The back office, on its own address (never the players').
  const adminPort = port + 3000;
  const adminBase = `http://127.0.0.1:${adminPort}`;
  const store = database ? ['--database', database] : ['--data', dataDir];
  // Every fresh page makes a guest, all from this one address: the per-IP limit is raised.
  const limits = ['--auth-burst', '10000', '--auth-per-minute', '10000'];
  const server = spawn(vegasBinary, [...store, 'serve', ...(demo ? ['--demo'] : []), ...limits, '--addr', `127.0.0.1:${port}`, '--admin-addr', `127.0.0.1:${adminPort}`, '--dist', join(root, 'dist'), ...args],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, RUST_LOG: 'warn' } });
  const exited = new Promise(resolve => server.once('exit', resolve));
  const stop = async ({ keep = false } = {}) => {
    server.kill();
    await exited;
    if (!keep) rmSync(dataDir, { recursive: true, force: true });
  };
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`${base}/healthz`)).ok) return { base, adminBase, dataDir, stop }; } catch { /* not up yet */ }
    await new Promise(r => setTimeout(r, 100));
  }
  stop();
  throw new Error('the ticket server did not start');
}

/** Waits for the page's next animation frame: the pace of a pointer or a finger moving over it. */
export function nextFrame(page) {
  return page.evaluate(() => new Promise(requestAnimationFrame));
}

/** Calls `probe` until `holds(value)`, or fails after `timeout` ms: waiting on a condition the page cannot signal. */
export async function until(probe, holds, { timeout = 15000, what = 'the condition' } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const value = await probe();
    if (holds(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} never held: ${JSON.stringify(value)}`);
    await new Promise(resolve => setTimeout(resolve, 100));
  }
}

// `make bench-web`: what a player downloads, how soon the game can be played, and what one pointer
// move over a scratch zone costs.
//
// - First load on the wire: each file of a player's first load (the game's page and what it names) as
//   the ticket server sends it to a browser (brotli, precompressed at build), and gzip only; the
//   total. Target: at most 150 KB (brotli, as browsers get it).
// - Start-up: from navigation to an enabled « Jouez » button, and to the first paint, in headless
//   Chromium against the real server, each run in a fresh context (nothing cached, a new guest);
//   median of 5, locally and with a throttled phone profile (150 ms round trip, 1.6 Mbit/s down,
//   750 kbit/s up, CPU 4× slower). Targets: ≤ 250 ms locally, ≤ 1.8 s throttled.
// - Pointer move: in headless Chromium against the real server, a « Jouez » ticket, then pointermove
//   events dispatched on the poker hand's foil along one line (so the zone stays below its reveal
//   threshold and every event runs the full handler: canvas erase + coverage grid). dispatchEvent
//   runs the handler synchronously; batches of 50 are timed, because performance.now() is coarsened
//   to 100 µs in browsers. Goal: the slowest batch under 1 ms a move, a small share of a 16 ms frame.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { root, launchBrowser, startTicketServer, firstLoadFiles } from './support.mjs';

const kb = bytes => `${(bytes / 1000).toFixed(1).padStart(8)} KB`;
const verdict = met => (met ? 'met' : 'MISSED');

/** The bytes the server puts on the wire for `path` (not decompressed), and their encoding. */
function sent(base, path, acceptEncoding) {
  return new Promise((resolve, reject) => {
    request(`${base}/${path}`, { headers: { 'accept-encoding': acceptEncoding } }, response => {
      let bytes = 0;
      response.on('data', chunk => { bytes += chunk.length; });
      response.on('end', () => resolve({ bytes, encoding: response.headers['content-encoding'] ?? 'none' }));
    }).on('error', reject).end();
  });
}

async function firstLoadSizes(base) {
  console.log('a player\'s first load, as the ticket server sends it');
  console.log(`  ${'file'.padEnd(34)} ${'raw'.padStart(11)} ${'on the wire'.padStart(17)} ${'gzip only'.padStart(11)}`);
  const totals = { raw: 0, best: 0, gzip: 0 };
  for (const name of firstLoadFiles()) {
    const raw = readFileSync(join(root, 'dist', name));
    const best = await sent(base, name === 'index.html' ? '' : name, 'br, gzip');
    const gzip = await sent(base, name === 'index.html' ? '' : name, 'gzip');
    totals.raw += raw.length;
    totals.best += best.bytes;
    totals.gzip += gzip.bytes;
    console.log(`  ${name.padEnd(34)} ${kb(raw.length)} ${kb(best.bytes)} ${best.encoding.padEnd(5)} ${kb(gzip.bytes)}`);
  }
  console.log(`  ${'total'.padEnd(34)} ${kb(totals.raw)} ${kb(totals.best)}       ${kb(totals.gzip)}`);
  console.log(`  target, at most 150 KB on the wire: ${verdict(totals.best <= 150_000)}`);
}

const PHONE = { latency: 150, downloadThroughput: 1.6e6 / 8, uploadThroughput: 750e3 / 8, cpu: 4 };

/** One cold load in a fresh context: ms from navigation to the first paint and to an enabled « Jouez ». */
async function coldStart(browser, base, profile) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  if (profile) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, ...profile });
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: profile.cpu });
  }
  // Noted by the page itself, in its own clock (0 = navigation start), the moment the button is enabled.
  await page.addInitScript(() => {
    new MutationObserver((_, observer) => {
      const button = document.querySelector('[data-testid=play-jouez]');
      if (button && !button.disabled) {
        window.playableAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { subtree: true, childList: true, attributes: true });
  });
  await page.goto(base);
  await page.waitForFunction(() => window.playableAt !== undefined, null, { timeout: 30_000 });
  const times = await page.evaluate(() => ({
    playable: window.playableAt,
    paint: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
  }));
  await context.close();
  return times;
}

async function startUpTimes(base, browser) {
  const median = values => [...values].sort((a, b) => a - b)[values.length >> 1];
  console.log('start-up: navigation to the first paint and to an enabled « Jouez » (median of 5 cold runs)');
  for (const [label, profile, target] of [['locally', null, 250], ['throttled phone', PHONE, 1800]]) {
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await coldStart(browser, base, profile));
    const playable = median(runs.map(r => r.playable));
    const paint = median(runs.map(r => r.paint));
    const all = runs.map(r => r.playable.toFixed(0)).join(', ');
    console.log(`  ${label.padEnd(16)} first paint ${paint.toFixed(0).padStart(5)} ms   playable ${playable.toFixed(0).padStart(5)} ms (runs: ${all})   target ≤ ${target} ms: ${verdict(playable <= target)}`);
  }
}

async function pointerMoveTimes(base, browser) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 }, deviceScaleFactor: 2 });
  await page.goto(base);
  await page.click('[data-testid=play-jouez]:not([disabled])');
  await page.click('[data-testid=choose-poker]');
  const foil = page.locator('[data-testid=foil-poker-hand]');
  const perMove = await foil.evaluate(canvas => {
    const box = canvas.getBoundingClientRect();
    const y = box.top + 10;
    const event = (type, x) => new PointerEvent(type, { pointerId: 1, pointerType: 'mouse', bubbles: true, buttons: 1, clientX: x, clientY: y });
    canvas.dispatchEvent(event('pointerdown', box.left + 2));
    const batches = [];
    for (let batch = 0; batch < 200; batch++) {
      const start = performance.now();
      for (let i = 0; i < 50; i++) {
        // Back and forth along the line in small steps, like a quick mouse.
        const step = (batch * 50 + i) % 200;
        canvas.dispatchEvent(event('pointermove', box.left + 2 + (step < 100 ? step : 200 - step) * (box.width - 4) / 100));
      }
      batches.push((performance.now() - start) / 50);
    }
    canvas.dispatchEvent(event('pointerup', box.left + 2));
    return batches;
  });
  if (await page.getAttribute('[data-testid=zone-poker-hand]', 'data-revealed') !== 'false') {
    throw new Error('the zone was revealed: the measure left the handler’s full path');
  }
  const sorted = [...perMove].sort((a, b) => a - b);
  const us = ms => `${(ms * 1000).toFixed(1).padStart(7)} µs`;
  const mean = perMove.reduce((a, b) => a + b, 0) / perMove.length;
  console.log(`pointermove handler on a scratch zone (${perMove.length} batches of 50 moves, device pixel ratio 2)`);
  console.log(`  per move: mean ${us(mean)}   median batch ${us(sorted[sorted.length >> 1])}   slowest batch ${us(sorted.at(-1))}`);
  console.log(`  goal: slowest batch under 1 ms a move: ${sorted.at(-1) < 1 ? 'met' : 'MISSED'}`);
}

const server = await startTicketServer();
const browser = await launchBrowser();
try {
  await firstLoadSizes(server.base);
  await startUpTimes(server.base, browser);
  await pointerMoveTimes(server.base, browser);
} finally {
  await browser.close();
  await server.stop();
}

// `make bench-web`: what a player downloads, and what one pointer move over a scratch zone costs.
//
// - Transfer size: each file of the app (release build) as the ticket server sends it to a browser
//   that accepts brotli and gzip, and to one that accepts only gzip; gzip -9 of the file for
//   reference. Goal: the whole app under 600 KiB on the wire.
// - Pointer move: in headless Chromium against the real server, a « Jouez » ticket, then pointermove
//   events dispatched on the poker hand's foil along one line (so the zone stays below its reveal
//   threshold and every event runs the full handler: canvas erase + coverage grid). dispatchEvent
//   runs the handler synchronously; batches of 50 are timed, because performance.now() is coarsened
//   to 100 µs in browsers. Goal: the slowest batch under 1 ms a move, a small share of a 16 ms frame.
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { root, launchBrowser, startTicketServer } from './support.mjs';

const kib = bytes => `${(bytes / 1024).toFixed(1).padStart(8)} KiB`;

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

async function transferSizes(base) {
  const files = readdirSync(join(root, 'dist')).filter(name => name !== 'design.toml');
  console.log('transfer size of the app, as the ticket server sends it');
  console.log(`  ${'file'.padEnd(34)} ${'raw'.padStart(12)} ${'br or gzip'.padStart(14)} ${'gzip only'.padStart(12)} ${'gzip -9'.padStart(12)}`);
  const totals = { raw: 0, best: 0, gzip: 0 };
  for (const name of files) {
    const raw = readFileSync(join(root, 'dist', name));
    const best = await sent(base, name, 'br, gzip');
    const gzip = await sent(base, name, 'gzip');
    totals.raw += raw.length;
    totals.best += best.bytes;
    totals.gzip += gzip.bytes;
    console.log(`  ${name.padEnd(34)} ${kib(raw.length)} ${kib(best.bytes)} ${best.encoding.padEnd(1)} ${kib(gzip.bytes)} ${kib(gzipSync(raw, { level: 9 }).length)}`);
  }
  console.log(`  ${'total'.padEnd(34)} ${kib(totals.raw)} ${kib(totals.best)}   ${kib(totals.gzip)}`);
  console.log(`  goal: under 600 KiB on the wire (gzip only): ${totals.gzip < 600 * 1024 ? 'met' : 'MISSED'}`);
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
  await transferSizes(server.base);
  await pointerMoveTimes(server.base, browser);
} finally {
  await browser.close();
  server.stop();
}

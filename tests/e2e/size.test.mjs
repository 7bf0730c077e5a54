// What a player downloads stays lean: the game's first load (page, script, wasm, style, icon) at most
// 150 KB on the wire as the server sends it to a browser (the build's brotli files: every browser
// takes them), and at most 180 KB gzip for a client without brotli; none of the designers' preview in it. `make bench-web` prints the
// details.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { root, firstLoadFiles } from './support.mjs';

const LIMITS = { br: 150 * 1000, gz: 180 * 1000 };

for (const [encoding, limit] of Object.entries(LIMITS)) {
  test(`a player’s first load is at most ${limit / 1000} KB as .${encoding}`, () => {
    // The files the server sends as they are (`make dist` compresses them: brotli 11, gzip 9).
    const sizes = firstLoadFiles().map(name => [name, statSync(join(root, 'dist', `${name}.${encoding}`)).size]);
    const total = sizes.reduce((sum, [, bytes]) => sum + bytes, 0);
    assert.ok(sizes.some(([name]) => name.endsWith('_bg.wasm')), `the page names its wasm: ${sizes.map(([name]) => name)}`);
    assert.ok(total <= limit, `${total} bytes: ${sizes.map(([name, bytes]) => `${name} ${bytes}`).join(', ')}`);
  });
}

test('the game’s wasm carries none of the designers’ preview', () => {
  const wasm = firstLoadFiles().find(name => name.endsWith('_bg.wasm'));
  const bytes = readFileSync(join(root, 'dist', wasm));
  // Text only the preview draws, and a key only the design file parser reads.
  for (const text of ['Télécharger le design fourni', 'near_miss']) {
    assert.equal(bytes.includes(Buffer.from(text)), false, `"${text}" is in the game's wasm`);
  }
  const preview = readFileSync(join(root, 'dist', 'preview', 'index.html'), 'utf8');
  assert.match(preview, /_bg\.wasm/, 'the preview is built beside the game, in dist/preview/');
});

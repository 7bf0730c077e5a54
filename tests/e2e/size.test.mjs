// What a player downloads stays lean: the game's first load (page, script, wasm, style, icon), gzip -9,
// under 160 KB, and none of the designers' preview in it. `make bench-web` prints the details.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { root, firstLoadFiles } from './support.mjs';

const LIMIT = 160 * 1000;

test('a player’s first load is at most 160 KB gzip', () => {
  const sizes = firstLoadFiles().map(name => [name, gzipSync(readFileSync(join(root, 'dist', name)), { level: 9 }).length]);
  const total = sizes.reduce((sum, [, bytes]) => sum + bytes, 0);
  assert.ok(sizes.some(([name]) => name.endsWith('_bg.wasm')), `the page names its wasm: ${sizes.map(([name]) => name)}`);
  assert.ok(total <= LIMIT, `${total} bytes gzip: ${sizes.map(([name, bytes]) => `${name} ${bytes}`).join(', ')}`);
});

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

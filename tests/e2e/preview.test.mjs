// The designers' preview with no ticket server: only dist/ is served, and the page must not ask for
// anything else. Every gallery item is screenshotted and compared (pixelmatch) with its committed
// baseline in tests/e2e/baselines/preview/; the differences of a failing item go to artifacts/.
//
// After an intended visual change, look at the new screenshots, then rewrite the baselines with
// `make update-baselines` (UPDATE_BASELINES=1 for this file) and commit them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import pixelmatch from 'pixelmatch';
import AxeBuilder from '@axe-core/playwright';
import { root, artifacts, launchBrowser, serveDist } from './support.mjs';

const baselines = join(root, 'tests', 'e2e', 'baselines', 'preview');
const updating = process.env.UPDATE_BASELINES === '1';
const SEED = 'baseline';
// The same build draws the same pixels here; the tolerance only absorbs anti-aliasing noise. The colour
// threshold (pixelmatch's YIQ distance) is low enough to catch a gold turned a shade paler.
const SAME_PLACE = { threshold: 0.05, share: 0.001 };
// One picture at two page positions: fractional offsets re-rasterise every edge slightly.
const ELSEWHERE = { threshold: 0.1, share: 0.002 };
const shippedDesign = readFileSync(join(root, 'static', 'design.toml'), 'utf8');

let browser, server, base;
const foreignRequests = [];
// Baselines are drawn by one Chromium; another major version may anti-alias text a little differently,
// so it is compared with the looser tolerance (layout, colours and symbols are still checked).
const browserFile = join(baselines, 'chromium-version.txt');
let baselineTolerance = SAME_PLACE;

before(async () => {
  mkdirSync(baselines, { recursive: true });
  ({ server, base } = await serveDist());
  browser = await launchBrowser();
  const major = version => version.split('.')[0];
  if (updating) {
    writeFileSync(browserFile, `${browser.version()}\n`);
  } else if (existsSync(browserFile) && major(readFileSync(browserFile, 'utf8').trim()) !== major(browser.version())) {
    console.warn(`baselines drawn by Chromium ${readFileSync(browserFile, 'utf8').trim()}, this is ${browser.version()}: looser tolerance; run make update-baselines`);
    baselineTolerance = ELSEWHERE;
  }
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** The preview at `hash`, reduced motion so that nothing is caught mid-animation. */
async function openPreview(hash = `#/preview?seed=${SEED}`) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, deviceScaleFactor: 1, reducedMotion: 'reduce' });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  page.on('request', r => {
    const url = r.url();
    if (url.startsWith('http') && (!url.startsWith(base) || /\/(api|\.well-known)\//.test(url))) foreignRequests.push(url);
  });
  await page.goto(`${base}/preview/${hash}`);
  await page.waitForSelector('[data-testid=design-status]');
  // Every foil painted with its artwork (it loads beside the page).
  await page.waitForFunction(() => document.querySelector('canvas.foil') && !document.querySelector('canvas.foil[data-foil=plain]'));
  return { context, page, errors };
}

const specimen = (page, id) => page.locator(`[data-testid=specimen-${id}]`);

async function specimenIds(page) {
  return page.locator('article.specimen').evaluateAll(items => items.map(i => i.dataset.testid.replace(/^specimen-/, '')));
}

/** The top-left `width` × `height` pixels of a decoded PNG, as RGBA bytes. */
function crop(png, width, height) {
  if (png.width === width && png.height === height) return png.data;
  const out = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) png.data.copy(out, y * width * 4, y * png.width * 4, (y * png.width + width) * 4);
  return out;
}

/** A specimen's drawing, without its title and controls. */
async function screenshot(page, id) {
  const frame = specimen(page, id).locator('[data-testid=specimen-frame]');
  await frame.scrollIntoViewIfNeeded();
  return frame.screenshot({ animations: 'disabled' });
}

/** Why two screenshots differ, or null; the differing pixels go to artifacts/preview-<name>-diff.png. */
function difference(expectedPng, actualPng, name, tolerance = SAME_PLACE) {
  const expected = PNG.sync.read(expectedPng);
  const actual = PNG.sync.read(actualPng);
  writeFileSync(join(artifacts, `preview-${name}.png`), actualPng);
  // A box at a fractional position may round to one pixel more or less; anything more is a change.
  if (Math.abs(expected.width - actual.width) > 1 || Math.abs(expected.height - actual.height) > 1) {
    return `${name}: ${actual.width}×${actual.height} px, expected ${expected.width}×${expected.height}`;
  }
  const [width, height] = [Math.min(expected.width, actual.width), Math.min(expected.height, actual.height)];
  const diff = new PNG({ width, height });
  const differing = pixelmatch(crop(expected, width, height), crop(actual, width, height), diff.data, width, height, { threshold: tolerance.threshold });
  if (differing <= tolerance.share * width * height) return null;
  writeFileSync(join(artifacts, `preview-${name}-diff.png`), PNG.sync.write(diff));
  return `${name}: ${differing} pixels differ (diff in artifacts/preview-${name}-diff.png)`;
}

/** Compares a specimen with its baseline (or, when updating, writes the baseline). */
async function matchesBaseline(page, id, name = id) {
  const png = await screenshot(page, id);
  const file = join(baselines, `${name}.png`);
  if (updating) {
    writeFileSync(file, png);
    return null;
  }
  if (!existsSync(file)) return `${name}: no baseline (run make update-baselines)`;
  return difference(readFileSync(file), png, name, baselineTolerance);
}

async function assertMatches(page, id, name) {
  assert.equal(await matchesBaseline(page, id, name), null);
}

test('with no server, the preview draws every outcome of every surface and a ticket per pattern', async () => {
  const { context, page, errors } = await openPreview();
  const ids = await specimenIds(page);
  const patterns = (shippedDesign.match(/^\[\[pattern\]\]/gm) ?? []).length;
  for (const id of ['poker-losing', 'poker-pair', 'poker-two-pairs', 'poker-brelan', 'poker-full', 'poker-carre',
    'roulette-3', 'roulette-10000', 'roulette-losing', 'roulette-near-miss',
    'craps-1-6', 'craps-2-5', 'craps-3-4', 'craps-5-6', 'craps-losing', 'craps-near-miss',
    'jackpot-one-cherry', 'jackpot-three-stars', 'jackpot-three-cherries', 'jackpot-three-bars', 'jackpot-three-crowns',
    'jackpot-three-sevens', 'jackpot-bonus-20', 'jackpot-losing', 'jackpot-near-miss', 'ticket-losing']) {
    assert.ok(ids.includes(id), `${id} is in the gallery`);
  }
  assert.equal(ids.filter(id => id.startsWith('ticket-')).length, patterns + 1, 'a ticket for each pattern, and a losing one');
  for (const lot of [3, 5, 10, 30, 50, 200, 1000, 10000, 40000]) assert.ok(ids.includes(`ticket-${lot}-1`), `a ticket of ${lot} €`);
  assert.equal(await page.locator('[data-testid=specimen-error]').count(), 0, 'every signed ticket verified, every surface read back');
  assert.match(await page.locator('[data-testid=design-status]').textContent(), new RegExp(`${patterns} motifs, ${ids.length} visuels`));
  await page.screenshot({ path: join(artifacts, '10-preview.png') });
  assert.deepEqual(errors, []);
  assert.deepEqual(foreignRequests, [], 'nothing but the static app is fetched');
  await context.close();
});

test('every gallery item matches its baseline', async () => {
  const { context, page } = await openPreview();
  const problems = [];
  for (const id of await specimenIds(page)) {
    const problem = await matchesBaseline(page, id);
    if (problem) problems.push(problem);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('controls: covered, half scratched, phone width, pixel ratio, and the Auto replay', async () => {
  const { context, page } = await openPreview();
  const item = specimen(page, 'ticket-50-4');
  const click = testid => item.locator(`[data-testid=${testid}]`).click();
  const revealed = () => item.locator('[data-revealed=true]').count();

  const uncovered = await screenshot(page, 'ticket-50-4');
  await click('show-covered');
  assert.equal(await revealed(), 0);
  await assertMatches(page, 'ticket-50-4', 'ticket-50-4--covered');
  await click('show-half');
  await assertMatches(page, 'ticket-50-4', 'ticket-50-4--half');

  await click('replay');
  await page.waitForFunction(() => {
    const n = document.querySelectorAll('[data-testid=specimen-ticket-50-4] [data-revealed=true]').length;
    return n > 0 && n < 12;
  });
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=specimen-ticket-50-4] [data-revealed=true]').length === 12);
  assert.equal(difference(uncovered, await screenshot(page, 'ticket-50-4'), 'ticket-50-4--replayed'), null, 'Auto ends uncovered');

  await click('width-phone');
  const phone = await item.locator('[data-testid=specimen-frame]').boundingBox();
  assert.equal(Math.round(phone.width), 358);
  await assertMatches(page, 'ticket-50-4', 'ticket-50-4--phone');

  const surface = specimen(page, 'jackpot-three-bars');
  await surface.locator('[data-testid=show-half]').click();
  await surface.locator('[data-testid=ratio-2]').click();
  const frame = await surface.locator('[data-testid=specimen-frame]').boundingBox();
  assert.equal(Math.round(frame.width), 880, 'shown at twice the size, pixel for pixel');
  const backing = await surface.locator('[data-testid=foil-jackpot-reels]').evaluate(c => c.width / c.offsetWidth);
  assert.equal(Math.round(backing), 2, 'foils painted at the chosen ratio');
  await assertMatches(page, 'jackpot-three-bars', 'jackpot-three-bars--half-ratio-2');
  await context.close();
});

test('a seed names the tickets, and a shared link shows one exact ticket', async () => {
  const { context, page } = await openPreview();
  const hand = () => specimen(page, 'ticket-losing').locator('[data-testid=foil-poker-hand]').getAttribute('aria-label');
  const first = await hand();
  await page.fill('[data-testid=seed]', 'autre graine');
  await page.press('[data-testid=seed]', 'Enter');
  await page.waitForFunction(() => new URLSearchParams(location.hash.split('?')[1]).get('seed') === 'autre graine');
  await page.waitForFunction(old => document.querySelector('[data-testid=specimen-ticket-losing] [data-testid=foil-poker-hand]')?.getAttribute('aria-label') !== old, first);
  await page.fill('[data-testid=seed]', SEED);
  await page.press('[data-testid=seed]', 'Enter');
  await page.waitForFunction(old => document.querySelector('[data-testid=specimen-ticket-losing] [data-testid=foil-poker-hand]')?.getAttribute('aria-label') === old, first);

  const link = await specimen(page, 'ticket-200-3').locator('[data-testid=share] a').getAttribute('href');
  const shared = await openPreview(link.replace(/^\//, ''));
  assert.deepEqual(await specimenIds(shared.page), ['ticket-200-3']);
  const inGallery = await screenshot(page, 'ticket-200-3');
  assert.equal(difference(inGallery, await screenshot(shared.page, 'ticket-200-3'), 'ticket-200-3--shared', ELSEWHERE), null);
  await shared.context.close();
  await context.close();
});

test('a design file loaded from the page: refused with the validator message, or drawn', async () => {
  const { context, page } = await openPreview();
  const before = (await specimenIds(page)).length;
  const load = (name, text) => page.setInputFiles('[data-testid=design-file]', { name, mimeType: 'text/plain', buffer: Buffer.from(text) });

  await load('faux.toml', shippedDesign.replace('name = "3 € — bonus"\nlot = 3\nweight = 1\ntray = 3', 'name = "3 € — bonus"\nlot = 3\nweight = 1\ntray = 4'));
  const error = page.locator('[data-testid=design-error]');
  await error.waitFor();
  assert.match(await error.textContent(), /« faux\.toml » est refusé.*pattern « 3 € — bonus »: its wins add up to 4,00\s€, not to its lot of 3,00\s€/);
  assert.equal((await specimenIds(page)).length, before, 'the gallery stays as it was');
  await page.screenshot({ path: join(artifacts, '11-preview-design-refused.png') });

  const edited = shippedDesign.replace('craps = ["1+6", "1+6"]\ntray = 20', 'craps = ["1+6"]\ntray = 25');
  assert.notEqual(edited, shippedDesign);
  await load('essai.toml', edited);
  await specimen(page, 'jackpot-bonus-25').waitFor();
  assert.equal(await error.count(), 0);
  assert.match(await page.locator('[data-testid=design-status]').textContent(), /^essai\.toml/);

  await page.click('[data-testid=design-reset]');
  await specimen(page, 'jackpot-bonus-25').waitFor({ state: 'detached' });
  await context.close();
});

test('accessibility of the preview: no serious or critical axe violations', async () => {
  const { context, page } = await openPreview(`#/preview?seed=${SEED}&item=ticket-10-1`);
  await specimen(page, 'ticket-10-1').waitFor();
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious.map(v => `${v.id}: ${v.nodes.length} × ${v.help}`), []);
  await context.close();
});

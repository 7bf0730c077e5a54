// QA decks, and the example to copy: a demo server started with `--qa-deck FILE` sells first, in the
// file's order, the tickets it lists, so a headless test reaches the outcome it needs — here a
// 40 000 € win. See README, « QA decks ».
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifacts, launchBrowser, startTicketServer } from './support.mjs';

let server, browser, deckDir;

before(async () => {
  deckDir = mkdtempSync(join(tmpdir(), 'vegas-deck-'));
  const deck = join(deckDir, 'deck.txt');
  // One ticket per line: a design pattern's name, or a lot in euros.
  writeFileSync(deck, ['# the jackpot first, then a losing ticket', '40 000 € — quatre surfaces', '0', '5'].join('\n'));
  server = await startTicketServer({ args: ['--qa-deck', deck] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(deckDir, { recursive: true, force: true });
});

async function newPlayer({ realMoney = false, phone = false } = {}) {
  const device = phone ? { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true } : { viewport: { width: 1280, height: 1000 }, deviceScaleFactor: 2 };
  const context = await browser.newContext(device);
  const page = await context.newPage();
  if (realMoney) {
    // The page believes its server plays for real money: the mode it reads from the player's session.
    const asRealMoney = async route => {
      const response = await route.fetch();
      const body = await response.json();
      (body.player ?? body).demo = false;
      await route.fulfill({ response, json: body });
    };
    await page.route('**/api/me', asRealMoney);
    await page.route('**/api/guest', asRealMoney);
  }
  // Counts the notes the game plays through Web Audio.
  await page.addInitScript(() => {
    window.notesPlayed = 0;
    const create = AudioContext.prototype.createOscillator;
    AudioContext.prototype.createOscillator = function () { window.notesPlayed++; return create.call(this); };
  });
  await page.goto(server.base);
  await page.waitForFunction(() => /\d,\d\d/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  return { context, page };
}

test('the deck’s first ticket wins 40 000 €, credited to the balance', async () => {
  const { context, page } = await newPlayer();
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  // The amount counts up to the lot.
  await page.waitForFunction(() => /40\s000,00/.test(document.querySelector('[data-testid=result-amount]')?.textContent ?? ''));
  assert.ok(await page.evaluate(() => window.notesPlayed) >= 6, 'a chime for each surface won, then a fanfare');
  assert.equal(await page.locator('.result.jackpot .confetti i').count(), 48, 'confetti, more for a bigger lot');
  await page.waitForFunction(() => /40\s097,00/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  const [ticket] = await page.evaluate(async () => (await fetch('/api/tickets?limit=1')).json());
  assert.equal(ticket.win_cents, 4_000_000);
  assert.match(ticket.serial, /^E0-B1-0000000$/, 'sold from the deck’s own block');
  const claims = JSON.parse(Buffer.from(ticket.payload.split('.')[1], 'base64url').toString());
  assert.equal(claims.qa, true, 'marked as a test ticket');
  await page.screenshot({ path: join(artifacts, 'qa-deck-40000.png'), fullPage: true });
  await context.close();
});

test('a page of a real-money server refuses a test ticket and draws nothing', async () => {
  const { context, page } = await newPlayer({ realMoney: true });
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=error]');
  assert.match(await page.locator('[data-testid=error]').textContent(), /ticket de test/);
  assert.equal(await page.locator('[data-testid^=foil-]').count(), 0, 'no ticket drawn');
  await context.close();
});

test('on a phone, the win, the balance and the whole ticket are on screen at once', async () => {
  const { context, page } = await newPlayer({ phone: true });
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  await page.waitForFunction(() => /5,00/.test(document.querySelector('[data-testid=result-amount]')?.textContent ?? ''));
  const inView = async selector => {
    const box = await page.locator(selector).boundingBox();
    return box.y >= 0 && box.y + box.height <= 844 && box.x >= 0 && box.x + box.width <= 390;
  };
  for (const selector of ['[data-testid=result]', '[data-testid=balance]', '[data-testid=ticket]']) {
    assert.ok(await inView(selector), `${selector} is on screen`);
  }
  assert.equal(await page.evaluate(() => scrollY), 0, 'no scrolling to see it');
  assert.equal(await page.locator('.surface.in-view').count(), 1, 'one surface at a time, under tabs');
  await page.click('[data-testid=tab-poker]');
  assert.ok(await page.locator('[data-testid=surface-poker]').isVisible(), 'a tab shows its surface');
  await page.screenshot({ path: join(artifacts, 'phone-win.png') });
  await context.close();
});

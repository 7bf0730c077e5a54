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
  writeFileSync(deck, ['# the jackpot first, then two losing tickets, then a pair at poker', '40 000 € — quatre surfaces', '0', '0', '5 € — paire'].join('\n'));
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

test('the deck’s first ticket wins 40 000 €: credit, history and banner in one moment, one text at a time; recalled, its amount at once', async () => {
  const { context, page } = await newPlayer();
  // The page's clock, frame by frame, when each first showed the win: together, not a balance and a
  // history ahead of the banner (which used to wait half a second, then count up from 0 €).
  await page.evaluate(() => {
    window.firstSaid = {};
    const said = {
      banner: () => Number(getComputedStyle(document.querySelector('[data-testid=result]') ?? document.body).opacity) > 0.1 && document.querySelector('[data-testid=result]'),
      balance: () => /40\s097,00/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''),
      history: () => /gagné 40\s000,00/.test(document.querySelector('[data-testid=history-item-0]')?.textContent ?? ''),
    };
    const frame = () => {
      for (const [what, shows] of Object.entries(said)) if (!(what in window.firstSaid) && shows()) window.firstSaid[what] = performance.now();
      if (Object.keys(window.firstSaid).length < 3) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  await page.waitForFunction(() => Object.keys(window.firstSaid).length === 3);
  const firstSaid = await page.evaluate(() => window.firstSaid);
  const times = Object.values(firstSaid);
  assert.ok(Math.max(...times) - Math.min(...times) < 200, `shown together: ${JSON.stringify(firstSaid)}`);
  // One text at a time: the message line gives way to the banner.
  assert.equal(await page.locator('[data-testid=message]').isVisible(), false);
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

  // Another ticket, then the win looked at again: its amount at once, never counted up, in the past tense.
  await page.click('[data-testid=play-auto]');
  await page.waitForFunction(() => /Pas de gain/.test(document.querySelector('[data-testid=result]')?.textContent ?? ''), null, { timeout: 20000 });
  await page.evaluate(() => {
    window.amountsShown = [];
    new MutationObserver(() => {
      const amount = document.querySelector('[data-testid=result-amount]')?.textContent;
      if (amount && window.amountsShown.at(-1) !== amount) window.amountsShown.push(amount);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await page.click('[data-testid=history-item-1]');
  await page.waitForSelector('[data-testid=recall]');
  await page.waitForSelector('[data-testid=result-amount][data-counted=true]');
  assert.deepEqual((await page.evaluate(() => window.amountsShown)).map(a => a.replace(/\s/g, ' ')), ['40 000,00 €'], 'the final amount at once');
  assert.match(await page.locator('[data-testid=recall]').textContent(), /Rappel du ticket N° E0-B1-0000000/);
  assert.match(await page.locator('[data-testid=result]').textContent(), /^Gagné !40\s000,00\s€$/, 'a past participle, and no « Rejouer » on a recall');
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
  assert.deepEqual(await page.locator('[data-testid=result]').evaluate(e => [...e.classList]), ['result', 'won'], 'a small win: a gold banner, no glow nor confetti');
  const inView = async selector => {
    const box = await page.locator(selector).boundingBox();
    return box.y >= 0 && box.y + box.height <= 844 && box.x >= 0 && box.x + box.width <= 390;
  };
  for (const selector of ['[data-testid=result]', '[data-testid=balance]', '[data-testid=ticket]']) {
    assert.ok(await inView(selector), `${selector} is on screen`);
  }
  assert.equal(await page.evaluate(() => scrollY), 0, 'no scrolling to see it');
  assert.equal(await page.locator('.surface.in-view').count(), 1, 'one surface at a time, under tabs');
  // « Auto » uncovers Jackpot last; the ticket ends on the surface that won, the pair at poker.
  assert.equal(await page.locator('.surface.in-view').getAttribute('data-testid'), 'surface-poker');
  assert.match(await page.locator('[data-testid=win-poker]').textContent(), /^Gagné : 5,00\s€$/);
  assert.match(await page.locator('[data-testid=tab-jackpot]').textContent(), /perdu/, 'the tabs say the others');
  await page.click('[data-testid=tab-jackpot]');
  assert.ok(await page.locator('[data-testid=surface-jackpot]').isVisible(), 'a tab shows its surface');
  await page.screenshot({ path: join(artifacts, 'phone-win.png') });
  await context.close();
});

// End-to-end: the real server (fresh SQLite data dir) and the built app, in Debian's headless Chromium.
// Screenshots of the main states go to tests/e2e/artifacts/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { artifacts, launchBrowser, nextFrame, startTicketServer, until } from './support.mjs';

let server, browser, base;

before(async () => {
  server = await startTicketServer();
  base = server.base;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function newPlayer(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, deviceScaleFactor: 2, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  await page.goto(base);
  await page.waitForFunction(() => /\d,\d\d/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  return { context, page, errors };
}

const balanceCents = async page => {
  const text = (await page.locator('[data-testid=balance]').textContent()).replace(/[^\d,-]/g, '');
  return Math.round(Number(text.replace(',', '.')) * 100);
};

/** Drags a zig-zag over a zone's foil, as a finger or mouse would. */
async function scratch(page, slug) {
  const box = await page.locator(`[data-testid=foil-${slug}]`).boundingBox();
  // Start inside any shape (the wheel is round); pointer capture keeps the stroke going past its edge.
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.down();
  for (let y = 3; y <= box.height; y += 12) {
    await page.mouse.move(box.x + box.width - 3, box.y + y, { steps: 4 });
    await page.mouse.move(box.x + 3, Math.min(box.y + y + 6, box.y + box.height - 1), { steps: 4 });
  }
  await page.mouse.up();
  await page.waitForSelector(`[data-testid=zone-${slug}][data-revealed=true]`);
}

const ZONES = {
  poker: ['poker-hand', 'poker-bonus'],
  roulette: ['roulette-wheel', 'roulette-stake1', 'roulette-stake2', 'roulette-stake3'],
  craps: ['craps-throw1', 'craps-throw2', 'craps-throw3', 'craps-throw4'],
  jackpot: ['jackpot-reels', 'jackpot-tray'],
};

async function lastTicket(page) {
  return page.evaluate(async () => (await (await fetch('/api/tickets?limit=1')).json())[0]);
}

/** Polls the player's last ticket until `holds(ticket)`; `waitForFunction` cannot: it takes an async predicate's promise for a truthy answer. */
function untilLastTicket(page, holds, timeout = 10000) {
  return until(() => lastTicket(page), ticket => ticket && holds(ticket), { timeout, what: `the last ticket to hold ${holds}` });
}

/** Plays a ticket with « Auto » to its end, then « Rejouer »: the first ticket, once the next is on screen. */
async function autoThenReplay(page) {
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  const first = await lastTicket(page);
  await page.click('[data-testid=replay]');
  await page.waitForFunction(serial => !document.querySelector('[data-testid=serial]')?.textContent.includes(serial), first.serial);
  return first;
}

test('a guest starts with 100 € and sees the welcome ticket', async () => {
  const { page, context, errors } = await newPlayer();
  assert.equal(await balanceCents(page), 10000);
  await page.waitForSelector('[data-testid=welcome]');
  await page.screenshot({ path: join(artifacts, '01-welcome.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the rules, the odds and the 18+ notice are one click away, on desktop and phone', async () => {
  for (const [name, options] of [['desktop', {}], ['phone', { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, hasTouch: true }]]) {
    const { page, context, errors } = await newPlayer(options);
    const footer = await page.locator('[data-testid=responsible-gaming]').textContent();
    assert.match(footer, /18\+/);
    assert.match(footer, /09 74 75 13 13/);
    // A ticket in play: the rules open in the game's own tab, and « Retour au jeu » brings the game back
    // with that ticket, not a second game in another tab.
    await page.click('[data-testid=play-jouez]');
    await page.waitForSelector('[data-testid=choose-craps]', { state: 'attached' });
    await page.click('[data-testid=open-rules]');
    const rules = page.locator('[data-testid=rules]');
    await rules.waitFor();
    assert.equal(context.pages().length, 1, 'the rules open in the same tab');
    const text = await rules.textContent();
    for (const expected of ['Règles du jeu', 'Gains et probabilités', 'Un ticket sur 4,34 gagne', '70 %', '5 + 6', 'Trois 7', 'Un carré',
      'la main se lit sur les six cartes ensemble', 'Ticket non terminé', 'aucun gain n\'est jamais perdu']) {
      assert.ok(text.includes(expected), `${expected} in the rules`);
    }
    assert.equal(await page.locator('[data-testid=odds] tbody tr').count(), 9, 'one row per lot of the prize table');
    assert.match(await page.locator('[data-testid=odds] tbody tr').first().textContent(), /40\u202f000\u00a0€2\s*1 sur 750\u202f000$/);
    assert.ok(!text.includes(',00'), 'no pointless decimals in the odds');
    assert.match(text, /18\+/);
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(serious.map(v => `${v.id}: ${v.nodes.length} × ${v.help}`), []);
    await page.screenshot({ path: join(artifacts, `01b-rules-${name}.png`), fullPage: true });
    await page.click('[data-testid=back-to-game]');
    await page.waitForSelector('[data-testid=choose-craps]', { state: 'attached' });
    assert.equal(context.pages().length, 1, 'still one tab');
    assert.equal(await balanceCents(page), 9700, 'the same ticket, not a new game');
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test('Jouez: choose a surface, scratch it first, then the rest; the win is credited', async () => {
  const { page, context, errors } = await newPlayer();
  await page.click('[data-testid=play-jouez]');
  await page.waitForSelector('[data-testid=choose-craps]');
  assert.equal(await balanceCents(page), 9700, '3 € debited at once');
  await page.screenshot({ path: join(artifacts, '02-choose-surface.png'), fullPage: true });
  await page.click('[data-testid=choose-craps]');
  assert.equal(await page.getAttribute('[data-testid=foil-poker-hand]', 'aria-disabled'), 'true', 'other surfaces wait');
  for (const slug of ZONES.craps) await scratch(page, slug);
  await page.waitForSelector('[data-testid=win-craps]');
  await page.screenshot({ path: join(artifacts, '03-first-surface-scratched.png'), fullPage: true });
  for (const slug of [...ZONES.jackpot, ...ZONES.poker, ...ZONES.roulette]) await scratch(page, slug);
  await page.waitForSelector('[data-testid=result]');
  await page.screenshot({ path: join(artifacts, '04-jouez-finished.png'), fullPage: true });
  const ticket = await lastTicket(page);
  assert.equal(ticket.state, 'finished');
  await page.waitForFunction(expected => {
    const t = (document.querySelector('[data-testid=balance]')?.textContent ?? '').replace(/[^\d,]/g, '').replace(',', '.');
    return Math.round(Number(t) * 100) === expected;
  }, 9700 + ticket.win_cents);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a stroke started beside a foil scratches it from where it enters; the other surfaces are locked', async () => {
  const { page, context, errors } = await newPlayer();
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-roulette]');
  assert.equal(await page.getAttribute('[data-testid=surface-poker]', 'data-locked'), 'true', 'a padlock until roulette is done');
  assert.equal(await page.getAttribute('[data-testid=surface-roulette]', 'data-locked'), 'false');
  const box = await page.locator('[data-testid=foil-roulette-wheel]').boundingBox();
  // From 30 px left of the wheel, back and forth across it: each pass enters the foil from outside.
  await page.mouse.move(box.x - 30, box.y + 4);
  await page.mouse.down();
  for (let y = 4; y <= box.height; y += 10) {
    await page.mouse.move(box.x + box.width + 10, box.y + y, { steps: 6 });
    await page.mouse.move(box.x - 30, Math.min(box.y + y + 5, box.y + box.height - 1), { steps: 6 });
  }
  await page.mouse.up();
  await page.waitForSelector('[data-testid=zone-roulette-wheel][data-revealed=true]');
  assert.equal(await page.evaluate(() => String(window.getSelection())), '', 'no text selected by the stroke');
  await page.screenshot({ path: join(artifacts, '03b-locked-surfaces.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('the sound can be muted, and stays muted after a reload', async () => {
  const { page, context } = await newPlayer();
  const mute = page.locator('[data-testid=mute]');
  assert.equal(await mute.getAttribute('aria-pressed'), 'false');
  await mute.click();
  assert.equal(await mute.getAttribute('aria-pressed'), 'true');
  await page.reload();
  await page.waitForSelector('[data-testid=mute][aria-pressed=true]');
  assert.equal(await page.locator('[data-testid=mute]').textContent(), 'Son coupé');
  await context.close();
});

test('a guest creates an account and keeps its balance and history, logs out, and logs in again', async () => {
  const { page, context } = await newPlayer();
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  const balance = await balanceCents(page);
  const name = `joueur${Date.now() % 100000}`;
  await page.click('[data-testid=open-register]');
  await page.fill('[data-testid=account-name]', name);
  await page.fill('[data-testid=account-password]', 'court');
  await page.click('[data-testid=account-submit]');
  assert.equal(await page.locator('[data-testid=player-name]').count(), 0, 'the browser asks for 8 characters first');
  await page.fill('[data-testid=account-password]', 'as-de-trèfle');
  await page.screenshot({ path: join(artifacts, '11-create-account.png') });
  await page.click('[data-testid=account-submit]');
  await page.waitForSelector('[data-testid=player-name]');
  assert.equal(await page.locator('[data-testid=player-name]').textContent(), name);
  assert.equal(await balanceCents(page), balance, 'the guest’s money stays');

  await page.click('[data-testid=logout]');
  await page.waitForSelector('[data-testid=open-login]');
  await page.waitForFunction(() => /100,00/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''), null, { timeout: 10000 });
  await page.click('[data-testid=open-login]');
  await page.fill('[data-testid=account-name]', name);
  await page.fill('[data-testid=account-password]', 'mauvais-mot');
  await page.click('[data-testid=account-submit]');
  await page.waitForSelector('[data-testid=account-error]');
  assert.match(await page.locator('[data-testid=account-error]').textContent(), /incorrect/);
  await page.fill('[data-testid=account-password]', 'as-de-trèfle');
  await page.click('[data-testid=account-submit]');
  await page.waitForSelector('[data-testid=player-name]');
  await page.waitForFunction(b => {
    const t = (document.querySelector('[data-testid=balance]')?.textContent ?? '').replace(/[^\d,]/g, '').replace(',', '.');
    return Math.round(Number(t) * 100) === b;
  }, balance);
  await page.waitForSelector('[data-testid=history-item-0]');
  await context.close();
});

test('Auto uncovers every zone by itself, then shows the lot; history recalls the ticket', async () => {
  const { page, context } = await newPlayer();
  const reveals = [];
  page.on('request', request => request.url().endsWith('/reveal') && reveals.push(request.postData()));
  await page.click('[data-testid=play-auto]');
  // Bought, the ticket is in the history at once, while « Auto » uncovers it.
  await page.waitForFunction(() => /en cours/.test(document.querySelector('[data-testid=history-item-0]')?.textContent ?? ''));
  assert.ok(await page.locator('[data-revealed=false]').count() > 0, 'before « Auto » has ended');
  // The ticket « en cours » is the one in play: opening it from the history starts no second « Auto ».
  await page.click('[data-testid=history-item-0]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  assert.equal(await page.locator('[data-revealed=false]').count(), 0);
  assert.ok(reveals.length <= 12, `${reveals.length} reveal requests for 12 zones: one « Auto », one request at a time`);
  assert.equal(await page.locator('[data-testid=recall]').count(), 0, 'no recall of the ticket in play');
  await page.screenshot({ path: join(artifacts, '05-auto-finished.png'), fullPage: true });
  const auto = await lastTicket(page);
  assert.equal(await balanceCents(page), 9700 + auto.win_cents);

  await page.click('[data-testid=play-jouez]');
  await page.waitForSelector('[data-testid=choose-poker]');
  await page.waitForSelector('[data-testid=history-item-1]');
  await page.click('[data-testid=history-item-1]');
  await page.waitForFunction(serial => document.querySelector('[data-testid=serial]')?.textContent.includes(serial), auto.serial);
  assert.equal(await page.locator('[data-revealed=false]').count(), 0, 'the recalled ticket shows as it ended');
  await page.waitForSelector('[data-testid=result]');
  await context.close();
});

test('« Rejouer » buys the next ticket; a recall is marked, lists its steps with their times, and goes back to the game; history pages by ten', async () => {
  const { page, context, errors } = await newPlayer();
  const first = await autoThenReplay(page);
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  const second = await lastTicket(page);
  assert.equal(second.mode, 'auto', '« Rejouer » plays as the ticket before');
  assert.notEqual(second.id, first.id);

  await page.click('[data-testid=history-item-1]');
  await page.waitForSelector('[data-testid=recall]');
  const recall = await page.locator('[data-testid=recall]').textContent();
  assert.match(recall, /Rappel/);
  assert.ok(recall.includes(first.serial), recall);
  const steps = page.locator('[data-testid=recall-steps] li');
  assert.equal(await steps.count(), 12, 'every zone, once');
  const times = await steps.locator('time').allTextContents();
  assert.equal(times.length, 12);
  for (const time of times) assert.match(time, /^\d\d:\d\d:\d\d$/);
  assert.deepEqual(times, [...times].sort(), 'in the order uncovered');
  await page.waitForFunction(serial => document.querySelector('[data-testid=serial]')?.textContent.includes(serial), first.serial);
  assert.equal(await page.locator('[data-testid=replay]').count(), 0, 'no « Rejouer » on a recall');
  await page.screenshot({ path: join(artifacts, '06-recall.png'), fullPage: true });
  await page.click('[data-testid=recall-back]');
  await page.waitForFunction(serial => document.querySelector('[data-testid=serial]')?.textContent.includes(serial), second.serial);
  assert.equal(await page.locator('[data-testid=recall]').count(), 0);

  // Ten more tickets bought and finished elsewhere (the API), then the page again: 12 in all.
  await page.evaluate(async () => {
    for (let i = 0; i < 10; i++) {
      const bought = await fetch('/api/tickets', { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': `page-${i}` }, body: '{"mode":"auto"}' });
      const { ticket } = await bought.json();
      await fetch(`/api/tickets/${ticket.id}/complete`, { method: 'POST' });
    }
  });
  await page.reload();
  await page.waitForSelector('[data-testid=history-item-9]');
  assert.equal(await page.locator('.history-item').count(), 10);
  assert.equal(await page.isDisabled('[data-testid=history-newer]'), true);
  await page.click('[data-testid=history-older]');
  await page.waitForFunction(() => document.querySelectorAll('.history-item').length === 2);
  const older = await page.locator('.h-serial').allTextContents();
  assert.deepEqual(older, [second.serial, first.serial], 'the oldest two, newest first');
  assert.equal(await page.isDisabled('[data-testid=history-older]'), true, 'no page after the last');
  assert.match(await page.locator('[data-testid=history-item-0]').textContent(), /mise 3,00\s€.*\d\d\/\d\d\/\d{4}|\d\d\/\d\d\/\d{4}.*mise 3,00\s€/s);
  await page.click('[data-testid=history-newer]');
  await page.waitForSelector('[data-testid=history-item-9]');
  assert.deepEqual(errors, []);
  await context.close();
});

test('« Auto » goes on behind a recall: back to the game, the ticket has ended and its win is credited', async () => {
  const { page, context, errors } = await newPlayer();
  const first = await autoThenReplay(page);
  const second = await lastTicket(page);
  assert.notEqual(second.id, first.id);
  // The first ticket looked at again while « Auto » uncovers the second, until the server has ended it.
  await page.waitForSelector('[data-testid=zone-poker-hand][data-revealed=true]');
  assert.ok(await page.locator('[data-revealed=false]').count() > 0, '« Auto » still under way');
  const firstInHistory = page.locator('.history-item', { hasText: first.serial });
  await firstInHistory.click();
  await page.waitForSelector('[data-testid=recall]');
  await untilLastTicket(page, ticket => ticket.id === second.id && ticket.state === 'finished', 20000);
  await page.click('[data-testid=recall-back]');
  await page.waitForFunction(serial => document.querySelector('[data-testid=serial]')?.textContent.includes(serial), second.serial);
  await page.waitForSelector('[data-testid=result]');
  assert.equal(await page.locator('[data-revealed=false]').count(), 0, 'every zone of the game uncovered');
  const ended = await lastTicket(page);
  assert.equal(await balanceCents(page), 10000 - 600 + first.win_cents + ended.win_cents);
  assert.equal(await page.isDisabled('[data-testid=play-jouez]'), false, 'a next ticket can be bought');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a reload mid-game brings the ticket back where it was', async () => {
  const { page, context } = await newPlayer();
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-jackpot]');
  await scratch(page, 'jackpot-reels');
  await page.reload();
  await page.waitForSelector('[data-testid=zone-jackpot-reels][data-revealed=true]');
  assert.equal(await page.getAttribute('[data-testid=zone-jackpot-tray]', 'data-revealed'), 'false');
  assert.equal(await page.getAttribute('[data-testid=foil-jackpot-tray]', 'aria-disabled'), 'false', 'the tray is next');
  assert.equal(await page.getAttribute('[data-testid=foil-poker-hand]', 'aria-disabled'), 'true', 'jackpot first, still');
  // Keyboard: Enter uncovers the focused zone.
  await page.focus('[data-testid=foil-jackpot-tray]');
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-testid=zone-jackpot-tray][data-revealed=true]');
  await page.screenshot({ path: join(artifacts, '06-resumed.png'), fullPage: true });
  await context.close();
});

test('zones scratched offline are recorded, and recalled, at the time they were scratched, not when they reached the server', async () => {
  const { page, context, errors } = await newPlayer();
  const seconds = () => Date.now() / 1000;
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-poker]');
  await scratch(page, 'poker-hand');
  await untilLastTicket(page, ticket => ticket.revealed.length === 1);
  await context.setOffline(true);
  // What is checked is when each zone was scratched: the page's clock passes 3 s between them.
  const threeSecondsLater = () => page.waitForFunction(t => Date.now() >= t, Date.now() + 3000);
  const bonusAt = seconds();
  await scratch(page, 'poker-bonus');
  await threeSecondsLater();
  const wheelAt = seconds();
  await scratch(page, 'roulette-wheel');
  await threeSecondsLater();
  const backAt = seconds();
  await context.setOffline(false);
  const { revealed, revealed_at: at } = await untilLastTicket(page, ticket => ticket.revealed.length === 3, 15000);
  assert.deepEqual(revealed, [0, 1, 2]);
  assert.ok(Math.abs(at[1] - bonusAt) <= 2, `the bonus card at ${at[1] - bonusAt} s from when it was scratched`);
  assert.ok(Math.abs(at[2] - wheelAt) <= 2, `the wheel at ${at[2] - wheelAt} s from when it was scratched`);
  assert.ok(at[2] < backAt - 1, `not when the network came back (${backAt - at[2]} s before it)`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('scratching offline, then back online, then a reload: no zone is lost and the game completes', async () => {
  const { page, context } = await newPlayer();
  const before = await balanceCents(page);
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-poker]');
  await scratch(page, 'poker-hand');

  // The browser offline: the game goes on, says so, and catches up as soon as the network is back.
  await context.setOffline(true);
  await scratch(page, 'poker-bonus');
  await page.waitForSelector('[data-testid=retry-now]');
  assert.match(await page.locator('[data-testid=error]').textContent(), /Connexion perdue — nouvel essai/);
  await context.setOffline(false);
  await page.waitForSelector('[data-testid=error]', { state: 'detached', timeout: 3000 });
  assert.deepEqual((await lastTicket(page)).revealed, [0, 1], 'caught up, in order');

  // The server unreachable and the page reloaded before it caught up: the zones come back from the browser.
  let down = true;
  await page.route('**/reveal', route => (down ? route.abort('internetdisconnected') : route.continue()));
  await scratch(page, 'roulette-wheel');
  await scratch(page, 'roulette-stake1');
  await page.waitForSelector('[data-testid=retry-now]');
  await page.reload();
  await page.waitForSelector('[data-testid=zone-roulette-stake1][data-revealed=true]');
  assert.equal(await page.getAttribute('[data-testid=zone-roulette-wheel]', 'data-revealed'), 'true');
  await page.waitForSelector('[data-testid=retry-now]');
  await page.screenshot({ path: join(artifacts, '06b-reconnecting.png'), fullPage: true });
  down = false;
  await page.click('[data-testid=retry-now]');
  await page.waitForSelector('[data-testid=error]', { state: 'detached', timeout: 3000 });
  assert.deepEqual((await lastTicket(page)).revealed, [0, 1, 2, 3], 'recorded after the reload');

  for (const slug of [...ZONES.roulette.slice(2), ...ZONES.craps, ...ZONES.jackpot]) await scratch(page, slug);
  await page.waitForSelector('[data-testid=result]');
  const ticket = await lastTicket(page);
  assert.equal(ticket.state, 'finished');
  assert.equal(await balanceCents(page), before - 300 + ticket.win_cents, 'the win credited once');
  assert.equal(await page.isEnabled('[data-testid=play-jouez]'), true, 'the buttons are back');
  await context.close();
});

/** Records the Idempotency-Key of every purchase; `answer(n, route)` decides the fate of the n-th. */
async function watchPurchases(page, answer = (n, route) => route.continue()) {
  const keys = [];
  await page.route('**/api/tickets', route => {
    if (route.request().method() !== 'POST') return route.continue();
    keys.push(route.request().headers()['idempotency-key']);
    return answer(keys.length, route);
  });
  return keys;
}

const ticketCount = page => page.evaluate(async () => (await (await fetch('/api/tickets?limit=100')).json()).length);

test('a purchase whose answer is lost is sent again with the same key and buys once', async () => {
  const { page, context } = await newPlayer();
  const start = await balanceCents(page);
  // The first request reaches the server, which sells the ticket; its answer never comes back.
  const keys = await watchPurchases(page, async (n, route) => {
    if (n > 1) return route.continue();
    await route.fetch();
    return route.abort('internetdisconnected');
  });
  await page.click('[data-testid=play-auto]');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]')?.textContent.includes('Connexion perdue — nouvel essai'));
  assert.ok(await page.locator('[data-testid=play-jouez]').isDisabled(), 'no second purchase meanwhile');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  assert.equal(keys.length, 2);
  assert.equal(keys[1], keys[0], 'the retry is the same purchase');
  assert.equal(await ticketCount(page), 1);
  assert.equal(await balanceCents(page), start - 300 + (await lastTicket(page)).win_cents, 'one stake');
  await context.close();
});

test('« Réessayer » sends a purchase waiting for its next try at once, as it does reveals', async () => {
  const { page, context } = await newPlayer();
  const sentAt = [];
  const keys = await watchPurchases(page, (n, route) => {
    sentAt.push(Date.now());
    return n <= 3 ? route.abort('internetdisconnected') : route.continue();
  });
  await page.click('[data-testid=play-jouez]');
  // Tries 0.5 s then 1 s apart; the fourth would wait 2 s more.
  await page.waitForFunction(() => document.querySelector('[data-testid=error]')?.textContent.includes('Connexion perdue'));
  await until(() => keys.length, n => n >= 3, { what: 'three tries' });
  await page.click('[data-testid=retry-now]');
  const pressed = Date.now();
  await page.waitForSelector('[data-testid=choose-poker]');
  assert.equal(keys.length, 4);
  assert.ok(sentAt[3] - pressed < 1000, `the fourth try went ${sentAt[3] - pressed} ms after « Réessayer », not at its turn (2 s)`);
  assert.ok(keys.every(k => k === keys[0]), 'one key for every try');
  assert.equal(await ticketCount(page), 1);
  await context.close();
});

test('a double click buys one ticket', async () => {
  const { page, context } = await newPlayer();
  const start = await balanceCents(page);
  const keys = await watchPurchases(page);
  await page.dblclick('[data-testid=play-jouez]');
  await page.waitForSelector('[data-testid=choose-poker]');
  // A second purchase would have been sent by the second click's handler, before the next frames.
  await nextFrame(page);
  await nextFrame(page);
  assert.equal(keys.length, 1, 'one request');
  assert.equal(await ticketCount(page), 1);
  assert.equal(await balanceCents(page), start - 300);
  await context.close();
});

test('a purchase still unanswered at a reload is sent again, with its key, after it', async () => {
  const { page, context } = await newPlayer();
  const keys = await watchPurchases(page, (n, route) => (n <= 2 ? route.abort('internetdisconnected') : route.continue()));
  await page.click('[data-testid=play-jouez]');
  await page.waitForFunction(() => document.querySelector('[data-testid=error]')?.textContent.includes('Connexion perdue'));
  await page.reload();
  await page.waitForSelector('[data-testid=choose-poker]');
  assert.ok(keys.length >= 3, `${keys.length} requests`);
  assert.ok(keys.every(k => k === keys[0]), 'one key from the click to the answer, across the reload');
  assert.equal(await ticketCount(page), 1);
  await context.close();
});

test('a ticket signed with a key the page has not listed yet opens once the keys are fetched again', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  // The page loads with keys from before a rotation (here: none of the server's).
  let fetches = 0;
  await page.route('**/.well-known/jwks.json', async route => (fetches++ === 0 ? route.fulfill({ json: { keys: [] } }) : route.continue()));
  await page.goto(base);
  await page.click('[data-testid=play-jouez]:not([disabled])');
  await page.waitForSelector('[data-testid=choose-poker]');
  assert.equal(fetches, 2, 'the keys were fetched again once');
  assert.equal(await page.locator('[data-testid=error]').count(), 0);
  await context.close();
});

test('a tampered payload is refused and nothing is drawn', async () => {
  const { page, context } = await newPlayer();
  await page.route('**/api/tickets', async route => {
    if (route.request().method() !== 'POST') return route.continue();
    const response = await route.fetch();
    const body = await response.json();
    const [h, claims, s] = body.ticket.payload.split('.');
    const json = JSON.parse(Buffer.from(claims, 'base64url').toString());
    json.lot_cents = 4000000;
    body.ticket.payload = [h, Buffer.from(JSON.stringify(json)).toString('base64url'), s].join('.');
    await route.fulfill({ response, json: body });
  });
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=error]');
  assert.match(await page.locator('[data-testid=error]').textContent(), /Ticket refusé/);
  assert.equal(await page.locator('[data-testid=ticket]').count(), 0);
  await page.screenshot({ path: join(artifacts, '07-tampered-refused.png'), fullPage: true });
  await context.close();
});

test('no money: a clear message, no ticket', async () => {
  const { page, context } = await newPlayer();
  await page.route('**/api/tickets', route => route.request().method() === 'POST'
    ? route.fulfill({ status: 402, json: { error: 'insufficient_funds', message: 'not enough money' } })
    : route.continue());
  await page.click('[data-testid=play-jouez]');
  await page.waitForSelector('[data-testid=error]');
  assert.match(await page.locator('[data-testid=error]').textContent(), /Solde insuffisant/);
  await context.close();
});

test('phone width: the ticket fits, stacks, and scratches by touch', async () => {
  const { page, context } = await newPlayer({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true });
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-poker]');
  const box = await page.locator('[data-testid=foil-poker-bonus]').boundingBox();
  const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no horizontal scroll (${overflow}px too wide)`);
  // A finger drag is a pointer of type touch; dispatch one the way a touch screen does.
  await page.locator('[data-testid=foil-poker-bonus]').evaluate((el, b) => {
    const fire = (type, x, y) => el.dispatchEvent(new PointerEvent(type, { pointerId: 7, pointerType: 'touch', bubbles: true, buttons: type === 'pointerup' ? 0 : 1, clientX: x, clientY: y }));
    fire('pointerdown', b.x + 2, b.y + 2);
    for (let y = 2; y < b.height; y += 6) { fire('pointermove', b.x + b.width - 2, b.y + y); fire('pointermove', b.x + 2, b.y + y + 3); }
    fire('pointerup', b.x + 2, b.y + b.height - 2);
  }, box);
  await page.waitForSelector('[data-testid=zone-poker-bonus][data-revealed=true]');
  const canvasPixels = await page.locator('[data-testid=foil-poker-hand]').evaluate(c => c.width / c.getBoundingClientRect().width);
  assert.equal(Math.round(canvasPixels), 3, 'foil drawn at the device pixel ratio');
  await page.screenshot({ path: join(artifacts, '08-phone.png'), fullPage: true });
  await context.close();
});

test('accessibility: no serious or critical axe violations, in play', async () => {
  const { page, context } = await newPlayer();
  await page.click('[data-testid=play-jouez]');
  await page.waitForSelector('[data-testid=choose-poker]');
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious.map(v => `${v.id}: ${v.nodes.length} × ${v.help}`), []);
  await context.close();
});

// End-to-end: the rough edges a player met (issue « Play without a rough edge »), each played as a player
// would, against the real server and the built app.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';
import { artifacts, launchBrowser, nextFrame, startTicketServer } from './support.mjs';

let server, browser;

before(async () => {
  server = await startTicketServer();
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
  await page.goto(server.base);
  await page.waitForFunction(() => /\d,\d\d/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  return { context, page, errors };
}

const balanceCents = async page => {
  const text = (await page.locator('[data-testid=balance]').textContent()).replace(/[^\d,-]/g, '');
  return Math.round(Number(text.replace(',', '.')) * 100);
};

test('below a ticket\'s price « Jouez » and « Auto » are off, saying why and offering a top-up that turns them on', async () => {
  const { page, context, errors } = await newPlayer();
  // Spent down through the API until less than 3 € is left.
  const left = await page.evaluate(async () => {
    for (let i = 0; i < 5000; i++) {
      const me = await (await fetch('/api/me')).json();
      if (me.balance_cents < 300) return me.balance_cents;
      const bought = await fetch('/api/tickets', { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': `drain-${i}` }, body: '{"mode":"auto"}' });
      const { ticket } = await bought.json();
      await fetch(`/api/tickets/${ticket.id}/complete`, { method: 'POST' });
    }
    return null;
  });
  assert.ok(left !== null && left < 300, `spent down to ${left} cents`);
  await page.reload();
  await page.waitForFunction(() => /Solde insuffisant/.test(document.querySelector('[data-testid=message]')?.textContent));
  assert.equal(await balanceCents(page), left);
  assert.equal(await page.isDisabled('[data-testid=play-jouez]'), true, '« Jouez » off below the price');
  assert.equal(await page.isDisabled('[data-testid=play-auto]'), true, '« Auto » off below the price');
  assert.match(await page.locator('[data-testid=message]').textContent(), /^Solde insuffisant : un ticket coûte 3,00\s€\. Ajoutez-en avec « \+ 50 € démo », en haut\.$/);
  assert.equal(await page.locator('[data-testid=error]').count(), 0, 'no refusal on screen: nothing was refused');
  assert.equal((await page.locator('main').textContent()).match(/Solde insuffisant/g).length, 1, 'said once');
  await page.screenshot({ path: join(artifacts, '20-short-of-price.png'), fullPage: true });
  await page.click('[data-testid=top-up]');
  await page.waitForFunction(() => !/Solde insuffisant/.test(document.querySelector('[data-testid=message]')?.textContent));
  assert.equal(await balanceCents(page), left + 5000);
  assert.equal(await page.isDisabled('[data-testid=play-jouez]'), false);
  assert.equal(await page.isDisabled('[data-testid=play-auto]'), false);
  assert.deepEqual(errors, []);
  await context.close();
});

test('by keyboard the focused scratch zone shows its ring, drawn inside the zone that clips it', async () => {
  const { page, context, errors } = await newPlayer();
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-poker]');
  await page.waitForSelector('[data-testid=foil-poker-hand][tabindex="0"]');
  // Tab from the surface's heading area to its first zone, as a keyboard player does.
  await page.focus('[data-testid=foil-poker-hand]');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'foil-poker-hand');
  const zone = page.locator('[data-testid=zone-poker-hand]');
  const ring = PNG.sync.read(await zone.screenshot({ path: join(artifacts, '21-focus-ring.png') }));
  await page.evaluate(() => document.activeElement.blur());
  const plain = PNG.sync.read(await zone.screenshot());
  const changed = pixelmatch(ring.data, plain.data, null, ring.width, ring.height, { threshold: 0.1 });
  const perimeter = 2 * (ring.width + ring.height);
  assert.ok(changed > perimeter * 2, `the ring changes the zone's edge (${changed} pixels, perimeter ${perimeter})`);
  // The ring is the gold of the focus ring, drawn inside the zone: the pixel 3 px in from the left edge.
  const at = (png, x, y) => { const i = (png.width * y + x) * 4; return [png.data[i], png.data[i + 1], png.data[i + 2]]; };
  const [r, g, b] = at(ring, 3, Math.floor(ring.height / 2));
  assert.ok(r > 230 && g > 200 && b < 170, `gold at the zone's edge: rgb(${r}, ${g}, ${b})`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('by keyboard alone the focus follows the play: the choice, the zone to scratch, the next zone, then « Rejouer »', async () => {
  const { page, context, errors } = await newPlayer();
  const focusIs = testid => page.waitForFunction(id => document.activeElement?.dataset.testid === id, testid, { timeout: 5000 });
  await page.focus('[data-testid=play-jouez]');
  await page.keyboard.press('Enter');
  await focusIs('choose-poker');
  // The buttons turned off did not leave the focus at the top of the page.
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  await focusIs('choose-jackpot');
  await page.keyboard.press('Enter');
  await focusIs('foil-jackpot-reels');
  await page.keyboard.press('Enter');
  await focusIs('foil-jackpot-tray');
  await page.keyboard.press('Enter');
  // The first surface done, the rest in the ticket's order, each by Enter where the focus lands.
  // Each time a zone other than the one just uncovered: until the page re-renders, that one still holds
  // the focus and its tabindex, and a second Enter on it would uncover nothing.
  let uncovered = 'foil-jackpot-tray';
  for (let i = 0; i < 10; i++) {
    const next = await page.waitForFunction(
      last => { const at = document.activeElement; return at?.matches('canvas[tabindex="0"]') && at.dataset.testid !== last && at.dataset.testid; },
      uncovered, { timeout: 5000 });
    uncovered = await next.jsonValue();
    await page.keyboard.press('Enter');
  }
  await focusIs('replay');
  await page.screenshot({ path: join(artifacts, '22-focus-on-replay.png') });
  // « Auto »: the focus goes to the ticket while it plays, then to « Rejouer ».
  await page.focus('[data-testid=play-auto]');
  await page.keyboard.press('Enter');
  await focusIs('ticket');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  await focusIs('replay');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a reload keeps the surface chosen and a half-scratched foil; after a finished ticket it shows that ticket', async () => {
  const { page, context, errors } = await newPlayer();
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=choose-craps]');
  await page.reload();
  await page.waitForSelector('[data-testid=foil-craps-throw1][aria-disabled=false]');
  assert.equal(await page.locator('[data-testid=choose-hint]').count(), 0, 'the surface chosen is kept');
  assert.equal(await page.getAttribute('[data-testid=foil-poker-hand]', 'aria-disabled'), 'true', 'craps first, still');

  // One stroke across the top of the first throw: far less than uncovers it.
  const b = await page.locator('[data-testid=foil-craps-throw1]').boundingBox();
  await page.mouse.move(b.x + 4, b.y + 10);
  await page.mouse.down();
  await page.mouse.move(b.x + b.width - 4, b.y + 10, { steps: 8 });
  await page.mouse.up();
  const alpha = (fx, fy) => page.$eval('[data-testid=foil-craps-throw1]', (c, [fx, fy]) =>
    c.getContext('2d').getImageData(Math.floor(c.width * fx), Math.floor(c.height * fy), 1, 1).data[3], [fx, fy]);
  const scratched = [0.5, 10 / b.height], covered = [0.5, 0.9];
  assert.equal(await alpha(...scratched), 0, 'the stroke took the foil away');
  assert.equal(await alpha(...covered), 255);
  await page.reload();
  await page.waitForSelector('[data-testid=foil-craps-throw1][data-foil=art]');
  assert.equal(await page.getAttribute('[data-testid=zone-craps-throw1]', 'data-revealed'), 'false');
  assert.equal(await alpha(...scratched), 0, 'after the reload, scratched where it was');
  assert.equal(await alpha(...covered), 255, 'and covered where it was');
  await page.screenshot({ path: join(artifacts, '23-half-scratched-after-reload.png') });

  // Played to its end by keyboard, then reloaded: the same ticket, its result at once.
  for (let i = 0; i < 100 && (await page.locator('[data-testid=result]').count()) === 0; i++) {
    // The zone a key uncovers comes open: then the next takes the focus.
    const next = page.locator('canvas.foil[tabindex="0"]').first();
    if (await next.count()) {
      const zone = await next.getAttribute('data-testid');
      await next.focus();
      await page.keyboard.press('Enter');
      await page.waitForSelector(`[data-testid=${zone.replace('foil-', 'zone-')}][data-revealed=true]`);
    } else {
      await page.waitForFunction(() => document.querySelector('canvas.foil[tabindex="0"], [data-testid=result]'));
    }
  }
  const ended = { id: await page.getAttribute('[data-testid=ticket]', 'data-ticket-id'), result: await page.locator('[data-testid=result]').textContent() };
  // Any count-up over.
  await page.waitForFunction(() => !document.querySelector('[data-testid=result-amount][data-counted=false]'));
  const settled = await page.locator('[data-testid=result]').textContent();
  assert.deepEqual(await page.evaluate(() => Object.keys(localStorage).filter(k => k.startsWith('vegas.strokes.'))), [], 'no strokes kept once uncovered');
  await page.reload();
  await page.waitForSelector('[data-testid=result]');
  assert.equal(await page.getAttribute('[data-testid=ticket]', 'data-ticket-id'), ended.id, 'the last ticket, not the welcome card');
  assert.equal(await page.locator('[data-testid=welcome]').count(), 0);
  assert.equal(await page.locator('[data-testid=result]').textContent(), settled, 'its result at once');
  assert.ok(ended.result.length > 0);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a finger that starts its stroke in a corner of the round wheel scratches the wheel (touch events through CDP)', async () => {
  const { page, context, errors } = await newPlayer({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true });
  await page.click('[data-testid=play-jouez]');
  await page.click('[data-testid=tab-roulette]');
  await page.click('[data-testid=choose-roulette]');
  const foil = page.locator('[data-testid=foil-roulette-wheel]');
  await foil.scrollIntoViewIfNeeded();
  await page.waitForSelector('[data-testid=foil-roulette-wheel][tabindex="0"]');
  const b = await foil.boundingBox();
  // What a touch screen sends (not synthetic pointer events): the browser picks the touched element
  // and captures the pointer to it, as on a phone.
  const cdp = await context.newCDPSession(page);
  const touch = (type, x, y) => cdp.send('Input.dispatchTouchEvent', { type, touchPoints: type === 'touchEnd' ? [] : [{ x, y }] });
  // From the top-left corner, outside the round foil, in a zig-zag down the wheel.
  await touch('touchStart', b.x + 3, b.y + 3);
  for (let row = 1; row <= 12; row++) {
    await touch('touchMove', row % 2 ? b.x + b.width - 3 : b.x + 3, b.y + (row / 12) * (b.height - 3));
    await nextFrame(page);
  }
  await touch('touchEnd');
  await page.waitForSelector('[data-testid=zone-roulette-wheel][data-revealed=true]', { timeout: 5000 });
  await page.screenshot({ path: join(artifacts, '24-wheel-by-touch.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

const box = async (page, selector) => page.locator(selector).boundingBox();

test('no empty band above the ticket: in play the message line holds the result\'s room, and nothing moves when the result shows', async () => {
  const { page, context, errors } = await newPlayer();
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=ticket]');
  const [controls, message, inPlay] = [await box(page, '.controls'), await box(page, '[data-testid=message]'), await box(page, '[data-testid=ticket]')];
  assert.match(await page.locator('[data-testid=message]').textContent(), /\S/, 'the line between the buttons and the ticket says something');
  assert.ok(inPlay.y - (controls.y + controls.height) <= message.height + 2 * 10 + 1, `only the message line between the buttons and the ticket (${inPlay.y - controls.y - controls.height} px)`);
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  const ended = await box(page, '[data-testid=ticket]');
  assert.equal(ended.y, inPlay.y, 'the ticket stays where it was when the result shows');
  assert.equal(await page.locator('[data-testid=message]').isVisible(), false, 'one text at a time: the result in the message\'s place');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a long history leaves no hole between the buttons and the ticket', async () => {
  const { page, context, errors } = await newPlayer();
  await page.evaluate(async () => {
    for (let i = 0; i < 11; i++) {
      const bought = await fetch('/api/tickets', { method: 'POST', headers: { 'content-type': 'application/json', 'Idempotency-Key': `hole-${i}` }, body: '{"mode":"auto"}' });
      const { ticket } = await bought.json();
      await fetch(`/api/tickets/${ticket.id}/complete`, { method: 'POST' });
    }
  });
  await page.reload();
  await page.waitForSelector('[data-testid=history-item-9]');
  // The reload shows the last ticket, its result above it.
  await page.waitForSelector('[data-testid=result]');
  const [controls, result, ticket, history] = [await box(page, '.controls'), await box(page, '[data-testid=result]'), await box(page, '[data-testid=ticket]'), await box(page, '[data-testid=history]')];
  assert.ok(history.height > 600, `the history column is long (${history.height} px)`);
  assert.ok(result.y - (controls.y + controls.height) < 60, `the result right under the buttons (${result.y - controls.y - controls.height} px)`);
  assert.ok(ticket.y - (result.y + result.height) < 60, `the ticket right under the result (${ticket.y - result.y - result.height} px)`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a phone on its side (844×390): the ticket beside the buttons in one screen, then the result and the balance', async () => {
  const { page, context, errors } = await newPlayer({ viewport: { width: 844, height: 390 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true });
  const inView = async selector => {
    const b = await box(page, selector);
    return b && b.y >= 0 && b.y + b.height <= 390 && b.x >= 0 && b.x + b.width <= 844;
  };
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=ticket]');
  for (const selector of ['[data-testid=ticket]', '[data-testid=balance]', '[data-testid=play-auto]']) assert.ok(await inView(selector), `${selector} in view while playing`);
  await page.screenshot({ path: join(artifacts, '25-landscape-play.png') });
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
  for (const selector of ['[data-testid=result]', '[data-testid=balance]', '[data-testid=ticket]']) assert.ok(await inView(selector), `${selector} in view at the end`);
  assert.equal(await page.evaluate(() => scrollY), 0, 'no scrolling to see it');
  await page.screenshot({ path: join(artifacts, '26-landscape-end.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

test('logging out says so, and the page starts afresh', async () => {
  const { page, context, errors } = await newPlayer();
  const name = `sortie${Date.now() % 100000}`;
  await page.click('[data-testid=open-register]');
  await page.fill('[data-testid=account-name]', name);
  await page.fill('[data-testid=account-password]', 'un mot de passe');
  await page.click('[data-testid=account-submit]');
  await page.waitForSelector('[data-testid=logout]');
  await page.click('[data-testid=logout]');
  await page.waitForFunction(() => /Vous êtes déconnecté/.test(document.querySelector('[data-testid=message]')?.textContent ?? ''));
  assert.equal(await page.locator('[data-testid=player-name]').count(), 0, 'no longer signed in');
  await page.reload();
  await page.waitForFunction(() => /\d,\d\d/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  assert.doesNotMatch(await page.locator('[data-testid=message]').textContent(), /déconnecté/, 'said once, not at every visit');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a first visit and a reload leave the console clean, and the reload keeps the same player', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const logged = [];
  page.on('console', m => { if (['error', 'warning'].includes(m.type())) logged.push(`${m.type()}: ${m.text()}`); });
  page.on('pageerror', e => logged.push(`uncaught: ${e.message}`));
  const asked = [];
  const fetched = [];
  page.on('request', r => {
    fetched.push(new URL(r.url()).pathname);
    if (r.url().includes('/api/')) asked.push(`${r.method()} ${new URL(r.url()).pathname}`);
  });
  const balance = () => page.locator('[data-testid=balance]').textContent();
  for (const visit of ['first visit', 'reload']) {
    fetched.length = 0;
    await (visit === 'first visit' ? page.goto(server.base) : page.reload());
    await page.waitForFunction(() => /\d,\d\d/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
    // Chromium warns of a preload left unused some seconds after the load; a preload the page uses is
    // fetched once, where one it does not use is fetched again by what needed it (or never by it).
    const preloaded = await page.evaluate(() =>
      [...document.querySelectorAll('link[rel=preload], link[rel=modulepreload]')].map(l => new URL(l.href).pathname));
    for (const path of preloaded) {
      assert.equal(fetched.filter(f => f === path).length, 1, `${visit}: ${path} preloaded and used, fetched once`);
    }
    assert.deepEqual(logged, [], `${visit}: nothing in the console`);
  }
  assert.equal(asked.filter(a => a === 'POST /api/guest').length, 1, `one guest, kept over the reload: ${asked}`);
  assert.ok(asked.includes('GET /api/me'), `the reload asks for the session's player: ${asked}`);
  assert.match(await balance(), /100,00/);
  await context.close();
});

test('the account form says its rules before submitting, closes with × and Escape, and confirms the account made', async () => {
  const { page, context, errors } = await newPlayer();
  const form = page.locator('[data-testid=account-form]');
  await page.click('[data-testid=open-register]');
  assert.match(await page.locator('[data-testid=account-rules]').textContent(), /8 caractères au moins/, 'the rules before any refusal');
  await form.screenshot({ path: join(artifacts, 'account-form.png') });
  await page.keyboard.press('Escape');
  await form.waitFor({ state: 'detached' });
  await page.click('[data-testid=open-register]');
  await page.locator('[data-testid=account-name]').focus();
  await page.keyboard.press('Escape');
  await form.waitFor({ state: 'detached' });
  await page.click('[data-testid=open-register]');
  await page.click('[data-testid=account-close]');
  await form.waitFor({ state: 'detached' });

  const name = `Zoé${Date.now() % 100000}`;
  await page.click('[data-testid=open-register]');
  await page.fill('[data-testid=account-name]', name);
  await page.fill('[data-testid=account-password]', 'as-de-pique');
  await page.click('[data-testid=account-submit]');
  await form.waitFor({ state: 'detached' });
  assert.equal(await page.locator('[data-testid=player-name]').textContent(), name);
  assert.match(await page.locator('[data-testid=message]').textContent(), new RegExp(`Compte créé.*« ${name} »`));
  await page.screenshot({ path: join(artifacts, 'account-created.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

// The back office end to end, on a real-money server: a player plays and asks for a withdrawal from
// the game's « Jeu responsable » page; a finance member signs in with a password and a TOTP code,
// reads a block whose figures are those `vegas ledger check` reconciles, and pays the withdrawal, which
// the player then sees paid; a support member suspends the player, whose next purchase is refused.
// Screenshots go to tests/e2e/artifacts/bo-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { artifacts, launchBrowser, startTicketServer, vegasBinary } from './support.mjs';

let server, browser, dataDir;
const STAFF_PASSWORD = 'a long staff password';
const LAPTOP = { viewport: { width: 1366, height: 860 }, deviceScaleFactor: 1, reducedMotion: 'reduce' };
const DESKTOP = { viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1, reducedMotion: 'reduce' };

function vegas(...args) {
  return execFileSync(vegasBinary, ['--data', dataDir, ...args], { encoding: 'utf8', env: { ...process.env, RUST_LOG: 'warn', VEGAS_STAFF_PASSWORD: STAFF_PASSWORD } });
}

/** Adds a staff member with the CLI; their TOTP secret, as it prints it. */
function addStaff(name, role) {
  const printed = vegas('staff', 'add', name, '--role', role);
  return printed.match(/TOTP secret[^:]*: ([A-Z2-7]+)/)[1];
}

/** RFC 6238 on its own (HMAC-SHA1, 30 s, 6 digits), as an authenticator app computes it. */
function totp(secret, at = Date.now() / 1000) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bits = [...secret].map(c => alphabet.indexOf(c).toString(2).padStart(5, '0')).join('');
  const key = Buffer.from(bits.match(/.{8}/g).map(b => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 30)));
  const mac = createHmac('sha1', key).update(counter).digest();
  const offset = mac[19] & 15;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'vegas-e2e-bo-'));
  vegas('emission', 'create', '--blocks', '1');
  server = await startTicketServer({ demo: false, dataDir, args: ['--settle-after', '10000000'] });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function open(options) {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  return { context, page, errors };
}

async function noSeriousViolations(page, what) {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious.map(v => `${what}: ${v.id}: ${v.nodes.length} × ${v.help}`), []);
}

async function signIn(page, name, secret) {
  await page.goto(`${server.adminBase}/connexion`);
  await page.fill('[data-testid=sign-in-name]', name);
  await page.fill('[data-testid=sign-in-password]', STAFF_PASSWORD);
  await page.fill('[data-testid=sign-in-code]', totp(secret));
  await page.click('[data-testid=sign-in-submit]');
  await page.waitForSelector('[data-testid=staff-who]');
}

test('finance reads a block equal to the ledger check and pays a withdrawal the player asked for; support suspends the player', async () => {
  const finance = addStaff('fanny', 'finance');
  const support = addStaff('sam', 'support');

  // The player: a real-money account with its limits, funded by the operator, two tickets bought.
  const player = await open(DESKTOP);
  const p = player.page;
  await p.goto(server.base);
  await p.click('[data-testid=open-register]');
  await p.waitForSelector('[data-testid=rg-register]');
  for (const [field, value] of [['name', 'joueuse'], ['password', 'correct horse'], ['first-name', 'Jeanne'], ['last-name', 'Joueuse'], ['birth-date', '1985-06-15']]) {
    await p.fill(`[data-testid=register-${field}]`, value);
  }
  await p.click('[data-testid=register-submit]');
  for (const flow of ['stake', 'deposit']) {
    const form = p.locator(`[data-testid=limit-${flow}-week]`);
    await form.locator('input').fill('500');
    await form.locator('button').click();
    await p.waitForFunction(() => document.querySelector('[data-testid=rg-notice]')?.textContent.includes('enregistrée'));
  }
  vegas('wallet', 'credit', '--player', 'joueuse', '--amount', '40', '--reason', 'virement reçu');
  await p.goto(server.base);
  for (let i = 0; i < 2; i++) {
    await p.click('[data-testid=play-auto]');
    await p.waitForSelector('[data-testid=result]', { timeout: 20000 });
  }
  await p.goto(`${server.base}/jeu-responsable/`);
  await p.waitForSelector('[data-testid=rg-withdraw-amount]');
  await p.fill('[data-testid=rg-withdraw-amount]', '10');
  await p.click('[data-testid=rg-withdraw]');
  await p.waitForSelector('[data-testid=rg-withdrawal][data-state=pending]');
  assert.match(await p.locator('[data-testid=rg-withdrawal]').textContent(), /10,00.€ — en attente/);
  await p.screenshot({ path: join(artifacts, 'bo-player-withdrawal-pending.png'), fullPage: true });

  // Finance: signs in with the TOTP code, reads the block as `vegas ledger check` reconciles it.
  const staff = await open(LAPTOP);
  const f = staff.page;
  await signIn(f, 'fanny', finance);
  assert.equal(new URL(f.url()).pathname, '/blocs');
  const checked = vegas('ledger', 'check');
  const line = checked.match(/block E1-B1: (\d+) sold, stakes (.+?), prizes paid (.+?) \+ owed (.+?) = committed/);
  assert.ok(line, checked);
  const block = f.locator('[data-testid=block-E1-B1]');
  assert.equal(await block.locator('[data-testid=block-sold]').textContent(), line[1]);
  assert.equal(await block.locator('[data-testid=block-stakes]').textContent(), line[2]);
  assert.equal(await block.locator('[data-testid=block-paid]').textContent(), line[3]);
  assert.equal(await block.locator('[data-testid=block-owed]').textContent(), line[4]);
  assert.equal(await block.locator('[data-testid=block-theoretical]').textContent(), '70,00 %');
  assert.match(await f.locator('[data-testid=ledger-status]').textContent(), /rapproché/);
  await f.locator('details').first().evaluate(d => { d.open = true; });
  await f.screenshot({ path: join(artifacts, 'bo-blocks.png'), fullPage: true });
  await noSeriousViolations(f, 'blocks');

  // Finance pays the withdrawal; the player sees it paid.
  await f.click('[data-testid=nav-withdrawals]');
  const pending = f.locator('[data-testid=withdrawal]');
  assert.equal(await pending.count(), 1);
  assert.match(await pending.textContent(), /10,00.€/);
  await noSeriousViolations(f, 'withdrawals');
  await f.screenshot({ path: join(artifacts, 'bo-withdrawals.png'), fullPage: true });
  await pending.locator('[data-testid=withdrawal-reason]').fill('virement VIR-2026-001');
  await pending.locator('[data-testid=pay-withdrawal]').click();
  await f.waitForSelector('[data-testid=done]');
  assert.match(await f.locator('[data-testid=done]').textContent(), /Retrait payé/);
  await p.reload();
  await p.waitForSelector('[data-testid=rg-withdrawal][data-state=paid]');
  assert.match(await p.locator('[data-testid=rg-withdrawal]').textContent(), /10,00.€ — payé le/);

  // Support: finds the player, suspends the account; the player's next purchase is refused.
  const desk = await open(LAPTOP);
  const s = desk.page;
  await signIn(s, 'sam', support);
  assert.equal(await s.locator('[data-testid=nav-withdrawals]').count(), 0, 'support sees no money pages');
  await s.click('[data-testid=nav-players]');
  await s.fill('[data-testid=player-search]', 'joueuse');
  await s.click('[data-testid=player-search-submit]');
  await s.click('[data-testid=player-link]');
  assert.equal(await s.locator('[data-testid=adjust]').count(), 0, 'support moves no money');
  await noSeriousViolations(s, 'player page');
  await s.fill('[data-testid=suspension-reason]', 'vérification d\'identité');
  await s.click('[data-testid=suspend]');
  await s.waitForSelector('[data-testid=done]');
  assert.equal(await s.locator('[data-testid=player-state]').textContent(), 'suspendu');
  await s.screenshot({ path: join(artifacts, 'bo-player-suspended.png'), fullPage: true });
  await p.goto(server.base);
  await p.click('[data-testid=play-auto]');
  await p.waitForSelector('[data-testid=error]');
  assert.match(await p.locator('[data-testid=error]').textContent(), /compte est suspendu/);

  // Every action is in the log, chained.
  assert.match(vegas('audit', 'verify'), /audit log verified: \d+ rows/);
  const log = vegas('audit', 'show');
  for (const action of ['staff_added', 'wallet_credited', 'withdrawal_paid', 'player_suspended']) assert.match(log, new RegExp(action));
  for (const { errors } of [player, staff, desk]) assert.deepEqual(errors, []);
  for (const { context } of [player, staff, desk]) await context.close();
});

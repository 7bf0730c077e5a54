// « Jeu responsable » end to end, for real money: register (a minor refused) → limits → credited by the
// operator's `vegas wallet credit` → buy until the stake limit → a raise pending → a break that signs
// out and refuses the next login's purchase → the reality check, on a clock 60 times faster than real
// time (`--test-only-clock-speed`). Screenshots on desktop and phone go to tests/e2e/artifacts/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import { artifacts, launchBrowser, startTicketServer, until, vegasBinary } from './support.mjs';

let server, browser, base, dataDir;

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'vegas-e2e-rg-'));
  execFileSync(vegasBinary, ['--data', dataDir, 'emission', 'create', '--blocks', '1'], { stdio: 'ignore' });
  // A minute of the server's time passes each real second; settlement is put off past the test.
  server = await startTicketServer({ demo: false, dataDir, args: ['--test-only-clock-speed', '60', '--settle-after', '10000000'] });
  base = server.base;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const DESKTOP = { viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1, reducedMotion: 'reduce' };
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true, reducedMotion: 'reduce' };

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

function credit(name, euros) {
  return execFileSync(vegasBinary, ['--data', dataDir, 'wallet', 'credit', '--player', name, '--amount', String(euros), '--reason', 'virement test'], { encoding: 'utf8' });
}

/** Registers on the « Jeu responsable » page, reached from the game's « Créer un compte ». */
async function register(page, name, birthDate) {
  await page.goto(base);
  await page.waitForSelector('[data-testid=welcome-hint]');
  assert.match(await page.locator('[data-testid=welcome-hint]').textContent(), /Connectez-vous/);
  await page.click('[data-testid=open-register]');
  await page.waitForSelector('[data-testid=rg-register]');
  await page.fill('[data-testid=register-name]', name);
  await page.fill('[data-testid=register-password]', 'correct horse');
  await page.fill('[data-testid=register-first-name]', 'Camille');
  await page.fill('[data-testid=register-last-name]', name);
  await page.fill('[data-testid=register-birth-date]', birthDate);
  await page.click('[data-testid=register-submit]');
}

async function setLimit(page, flow, span, euros) {
  const form = page.locator(`[data-testid=limit-${flow}-${span}]`);
  await form.locator('input').fill(String(euros));
  await form.locator('button').click();
  await page.waitForFunction(() => document.querySelector('[data-testid=rg-notice]')?.textContent.includes('enregistrée'));
}

async function buyAuto(page) {
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=result]', { timeout: 20000 });
}

/** Waits until the server says the session's reality check is due. */
function realityCheckDue(page) {
  const session = () => page.evaluate(async () => (await fetch('/api/responsible/session')).json());
  return until(session, s => s.reality_check_due === true, { timeout: 60000, what: 'the reality check due' });
}

test('real money: identity, limits before money, the stake limit, a pending raise, a break', async () => {
  for (const [device, options] of [['desktop', DESKTOP], ['phone', PHONE]]) {
    const { context, page, errors } = await open(options);
    const name = `joueur${device}`;
    await register(page, name, '2015-06-01');
    await page.waitForSelector('[data-testid=register-error]');
    assert.match(await page.locator('[data-testid=register-error]').textContent(), /interdit aux mineurs/);
    await page.screenshot({ path: join(artifacts, `rg-01-register-minor-${device}.png`), fullPage: true });
    await page.fill('[data-testid=register-birth-date]', '1990-06-01');
    await page.click('[data-testid=register-submit]');
    // The limits come first: nothing is credited before them.
    await page.waitForSelector('[data-testid=rg-required]');
    await noSeriousViolations(page, 'limits to set');
    await page.screenshot({ path: join(artifacts, `rg-02-limits-required-${device}.png`), fullPage: true });
    assert.throws(() => credit(name, 50), /7-day deposit limit is not set/, 'no money before the limits');
    await setLimit(page, 'deposit', 'week', 100);
    await setLimit(page, 'stake', 'week', 9);
    await page.waitForFunction(() => !document.querySelector('[data-testid=rg-required]'));
    assert.match(credit(name, 50), /50,00/);

    // Buy until the stake limit: 9 € a week is three tickets; the fourth is refused with what is left
    // and when more frees up.
    await page.click('[data-testid=back-to-game]');
    await page.waitForFunction(() => /50,00/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
    assert.match(await page.locator('[data-testid=session-line]').textContent(), /Session \d+ min · net/);
    for (let i = 0; i < 3; i++) await buyAuto(page);
    await page.click('[data-testid=play-auto]');
    await page.waitForSelector('[data-testid=error]');
    const refusal = await page.locator('[data-testid=error]').textContent();
    assert.match(refusal, /Limite de mises sur 7 jours atteinte : il vous reste 0,00\s€\. Davantage à partir du \d\d\/\d\d\/\d{4}/);
    await page.screenshot({ path: join(artifacts, `rg-03-stake-limit-${device}.png`), fullPage: false });

    // A raise waits 48 h and the player's confirmation.
    await page.click('[data-testid=open-responsible]');
    await setLimit(page, 'stake', 'week', 30);
    await page.waitForSelector('[data-testid=rg-pending]');
    assert.match(await page.locator('[data-testid=rg-pending]').textContent(), /Limite de mises sur 7 jours : 30,00\s€/);
    assert.equal(await page.locator('[data-testid=rg-confirm]').isDisabled(), true, 'not before 48 h');
    assert.match(await page.locator('[data-testid=limit-stake-week]').textContent(), /9,00/);
    await page.screenshot({ path: join(artifacts, `rg-04-raise-pending-${device}.png`), fullPage: true });

    // A break: confirmed, it signs out; the next login's purchase is refused until it ends.
    await page.selectOption('[data-testid=rg-pause-choice]', 'break-1');
    await page.click('[data-testid=rg-pause-ask]');
    await page.waitForSelector('[data-testid=rg-confirm-pause]');
    await page.screenshot({ path: join(artifacts, `rg-05-break-confirm-${device}.png`), fullPage: false });
    await page.click('[data-testid=rg-pause-confirm]');
    await page.waitForSelector('[data-testid=rg-paused]');
    assert.match(await page.locator('[data-testid=rg-paused]').textContent(), /pause jusqu'au .* Vous êtes déconnecté/);
    await page.goto(base);
    await page.waitForSelector('[data-testid=welcome-hint]');
    await page.click('[data-testid=open-login]');
    await page.fill('[data-testid=account-name]', name);
    await page.fill('[data-testid=account-password]', 'correct horse');
    await page.click('[data-testid=account-submit]');
    await page.waitForSelector('[data-testid=player-name]');
    await page.click('[data-testid=play-auto]');
    await page.waitForSelector('[data-testid=error]');
    assert.match(await page.locator('[data-testid=error]').textContent(), /Vous faites une pause jusqu'au \d\d\/\d\d\/\d{4}/);
    await noSeriousViolations(page, 'the game, paused');
    await page.screenshot({ path: join(artifacts, `rg-06-paused-${device}.png`), fullPage: false });
    await page.click('[data-testid=open-responsible]');
    await page.waitForSelector('[data-testid=rg-history]');
    const history = await page.locator('[data-testid=rg-history]').textContent();
    for (const expected of ['Limite de dépôts sur 7 jours fixée à 100,00', 'Limite de mises sur 7 jours fixée à 9,00', 'Hausse de la limite de mises sur 7 jours à 30,00', 'Pause jusqu']) {
      assert.ok(history.includes(expected), `${expected} in ${history}`);
    }
    await noSeriousViolations(page, 'the page, paused');
    await page.screenshot({ path: join(artifacts, `rg-07-history-${device}.png`), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  }
});

test('the reality check comes after the chosen interval, and play goes on only once acknowledged', async () => {
  const { context, page, errors } = await open(DESKTOP);
  await register(page, 'pointeur', '1980-01-31');
  await page.waitForSelector('[data-testid=rg-required]');
  await setLimit(page, 'deposit', 'week', 100);
  await setLimit(page, 'stake', 'week', 100);
  await page.selectOption('[data-testid=rg-reality]', '15');
  await page.waitForFunction(() => document.querySelector('[data-testid=rg-notice]')?.textContent.includes('15 minutes'));
  credit('pointeur', 30);
  await page.click('[data-testid=back-to-game]');
  await page.waitForFunction(() => /30,00/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  await buyAuto(page);
  // 15 minutes of the server's time are 15 real seconds. The page reckons the check's time on its own
  // clock (here 60 times slower than the server's): once the server says it is due, the next purchase
  // is what the server refuses, and the check shows.
  await realityCheckDue(page);
  await page.click('[data-testid=play-auto]');
  await page.waitForSelector('[data-testid=reality-check]');
  const facts = await page.locator('[data-testid=reality-facts]').textContent();
  assert.match(facts, /Vous jouez depuis (1\d|2\d) min\. 1 ticket : mises 3,00\s€, gains [\d,]+\s€, résultat net [+−-]?[\d,]+\s€\./);
  assert.equal(await page.locator('[data-testid=play-auto]').isDisabled(), true, 'no purchase while it is due');
  await noSeriousViolations(page, 'the reality check');
  await page.screenshot({ path: join(artifacts, 'rg-08-reality-check-desktop.png'), fullPage: false });
  await page.click('[data-testid=reality-continue]');
  await page.waitForSelector('[data-testid=reality-check]', { state: 'detached' });
  await buyAuto(page);
  assert.deepEqual(errors, []);
  await context.close();

  // « Arrêter » signs out.
  const phone = await open(PHONE);
  await register(phone.page, 'pointeuse', '1980-01-31');
  await phone.page.waitForSelector('[data-testid=rg-required]');
  await setLimit(phone.page, 'deposit', 'week', 100);
  await setLimit(phone.page, 'stake', 'week', 100);
  await phone.page.selectOption('[data-testid=rg-reality]', '15');
  await phone.page.waitForFunction(() => document.querySelector('[data-testid=rg-notice]')?.textContent.includes('15 minutes'));
  credit('pointeuse', 30);
  await phone.page.click('[data-testid=back-to-game]');
  await phone.page.waitForFunction(() => /30,00/.test(document.querySelector('[data-testid=balance]')?.textContent ?? ''));
  await realityCheckDue(phone.page);
  await phone.page.click('[data-testid=play-auto]');
  await phone.page.waitForSelector('[data-testid=reality-check]');
  await phone.page.screenshot({ path: join(artifacts, 'rg-08-reality-check-phone.png'), fullPage: false });
  await phone.page.click('[data-testid=reality-stop]');
  await phone.page.waitForSelector('[data-testid=welcome-hint]');
  await phone.page.waitForFunction(() => /Connectez-vous/.test(document.querySelector('[data-testid=welcome-hint]')?.textContent ?? ''));
  assert.deepEqual(phone.errors, []);
  await phone.context.close();
});

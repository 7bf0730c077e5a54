// Several server instances on one PostgreSQL (the cluster `make test` starts, VEGAS_TEST_DATABASE): a
// ticket sold through one instance is verified by the browser with another instance's keys, and drawn.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { artifacts, launchBrowser, startTicketServer, vegasBinary } from './support.mjs';

const database = process.env.VEGAS_TEST_DATABASE;
const skip = !database && !process.env.VEGAS_REQUIRE_POSTGRES && 'no PostgreSQL (VEGAS_TEST_DATABASE)';
let instances = [], browser;

before(async () => {
  if (skip) return;
  assert.ok(database, 'VEGAS_TEST_DATABASE is not set');
  execFileSync(vegasBinary, ['--database', database, 'emission', 'create', '--blocks', '1'], { env: { ...process.env, RUST_LOG: 'warn' } });
  instances = [await startTicketServer({ database }), await startTicketServer({ database, instance: 1 })];
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await Promise.all(instances.map(i => i.stop()));
});

test('a ticket sold through one instance is verified and drawn by another', { skip }, async () => {
  const [a, b] = instances;
  // The session cookie is the host's, whatever the port: the same player on both instances.
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  await page.goto(a.base);
  await page.click('[data-testid=play-jouez]:not([disabled])');
  await page.waitForSelector('[data-testid=choose-poker]');
  const sold = await page.evaluate(async () => (await (await fetch('/api/tickets?limit=1')).json())[0]);

  await page.goto(b.base);
  await page.waitForFunction(serial => document.querySelector('[data-testid=serial]')?.textContent.includes(serial), sold.serial);
  assert.equal(await page.locator('[data-testid=error]').count(), 0, 'no verification failure');
  assert.ok(await page.locator('[data-testid=choose-poker]').isVisible(), 'the game goes on where it was');
  const keys = async base => (await (await fetch(`${base}/api/jwks`)).json()).keys.map(k => k.kid).sort();
  assert.deepEqual(await keys(b.base), await keys(a.base), 'both instances list the keys of the store');
  await page.screenshot({ path: join(artifacts, '12-cluster-other-instance.png') });
  assert.deepEqual(errors, []);
  await context.close();
});

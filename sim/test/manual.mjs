// A simulator on a manual clock from a fixed epoch, for tests that step its
// time themselves; each is closed after the test file.
import { after } from 'node:test';
import { startSimulator } from '../server.mjs';
import { client } from '../testkit.mjs';

export const EPOCH = '2026-01-01T00:00:00Z';
/** The change feed's order, as a query. */
export const FEED = 'sort_key=provision_updated_at&sort_dir=desc';

const sims = [];
after(() => Promise.all(sims.map((s) => s.close())));

/** A simulator on a manual clock from EPOCH, with `options` over that, and a client of its API. */
export async function start(options) {
  const sim = await startSimulator({ manualClock: true, epoch: EPOCH, ...options });
  sims.push(sim);
  return { sim, api: client(sim.url) };
}

// The floor: about the least a JS client can do to wait for Ironic nodes,
// written by hand for the benchmark. Each round is one fields-limited list,
// page after page until every waiting node has been seen; the decision rule is
// python-ironicclient's (the expected state wins; `error` or `* failed` fails;
// a stable state without a target fails). No retries, no timeout, no wasm.
// Two transports: the global `fetch` (the floor), and node:http with a
// keep-alive agent (`transport: 'http'`), to show what Node's fetch costs.
import http from 'node:http';

const FIELDS = 'uuid,provision_state,target_provision_state,last_error';
// `fields` needs API 1.8; a pinned version needs no negotiation.
const HEADERS = { 'X-OpenStack-Ironic-API-Version': '1.8', Accept: 'application/json' };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const agent = new http.Agent({ keepAlive: true });

/** GET `url` as JSON through the global fetch. */
async function viaFetch(url) {
  const res = await fetch(url, { headers: HEADERS });
  if (!res.ok) throw new Error(`HTTP ${res.status} from ${url}`);
  return res.json();
}

/** GET `url` as JSON through node:http. */
function viaHttp(url) {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: HEADERS, agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode} from ${url}`));
          else resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        });
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** How a node settles ('reached', 'failed', 'unexpected-stable'), or null while it is on its way. */
function decide(node, expected) {
  const state = node.provision_state;
  if (state === expected) return 'reached';
  if (state === 'error' || state.endsWith(' failed')) return 'failed';
  if (!node.target_provision_state) return 'unexpected-stable';
  return null;
}

/**
 * Waits until every node (by UUID) has settled; resolves with a Map uuid -> outcome.
 * `onSettled(uuid, outcome, node)` is called as each one settles.
 */
export async function waitForNodes(endpoint, uuids, expected, { pollInterval = 2, onSettled = () => {}, transport = 'fetch' } = {}) {
  const get = transport === 'http' ? viaHttp : viaFetch;
  const waiting = new Set(uuids);
  const outcomes = new Map();
  for (;;) {
    const toSee = waiting.size;
    let seen = 0;
    let url = `${endpoint}/v1/nodes?fields=${FIELDS}&limit=1000`;
    // Stop paging once every waiting node has been seen this round.
    while (url && seen < toSee) {
      const page = await get(url);
      for (const node of page.nodes) {
        if (!waiting.has(node.uuid)) continue;
        seen++;
        const outcome = decide(node, expected);
        if (outcome) {
          waiting.delete(node.uuid);
          outcomes.set(node.uuid, outcome);
          onSettled(node.uuid, outcome, node);
        }
      }
      url = page.next;
    }
    if (waiting.size === 0) return outcomes;
    await sleep(pollInterval * 1000);
  }
}

// tables(): what the core knows, for callers that show or check it too (the
// CLI, the console, the edge hosts). The scope filters and the API versions
// in it are checked against what the client does with an Ironic just below
// and at each version: the table and the behaviour cannot drift apart.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IronicClient, tables, UnsupportedVersionError } from 'ironic-wait';
import { nodes, startIronic } from './harness.mjs';

test('the tables are one frozen object, the same at each call', () => {
  const t = tables();
  assert.equal(tables(), t);
  assert.ok(Object.isFrozen(t) && Object.isFrozen(t.scopeFilters[0]) && Object.isFrozen(t.actionsByName.deploy));
  assert.deepEqual(t.actionsByName.clean, {
    name: 'clean',
    target: 'clean',
    expected: 'manageable',
    pollInterval: 10,
    via: ['cleaning', 'clean wait'],
    needs: 'cleanSteps',
  });
  assert.deepEqual(
    t.powerActions.find((a) => a.words === 'soft off'),
    {
      name: 'soft power off',
      target: 'soft power off',
      expected: 'power off',
      pollInterval: 2,
      via: [],
      needs: null,
      words: 'soft off',
    },
  );
  assert.ok(t.failureStates.includes('error') && t.failureStates.includes('deploy failed'));
  assert.equal(t.failureSuffix, ' failed');
  assert.deepEqual(
    t.scopeFilters.map(([option]) => option),
    ['provisionState', 'resourceClass', 'fault', 'conductorGroup', 'owner', 'lessee', 'shard'],
  );
  assert.deepEqual(t.versions, { fields: 8, history: 78, softPower: 27 });
  assert.deepEqual(t.outageDelays, [2, 4, 8, 16, 32, 64, 128, 256, 300]);
});

/** A simulator that plays an Ironic whose newest API version is 1.`minor`. */
const ironicAt = (minor) =>
  startIronic({ nodes: [{ ...nodes({ n1: 'available' })[0], owner: 'p1', fault: null }], maxVersion: `1.${minor}` });

const VALUES = { fault: 'power failure', provisionState: 'available' };

test('each scope filter is refused just below the version the table gives, and sent as its field at it', async () => {
  for (const [option, field, minor] of tables().scopeFilters) {
    const value = VALUES[option] ?? 'x';
    const below = await ironicAt(minor - 1);
    try {
      const client = new IronicClient({ endpoint: below.url });
      await assert.rejects(client.listNodes({ scope: { [option]: value } }), (e) => {
        assert.ok(e instanceof UnsupportedVersionError, `${option}: ${e}`);
        assert.match(e.message, new RegExp(`^scope\\.${option} needs API version 1\\.${minor}; the server speaks 1\\.${minor - 1}$`));
        return true;
      });
      assert.equal(below.requests('GET', '/v1/nodes/detail').length, 0, `${option}: nothing listed`);
    } finally {
      await below.close();
    }
    const at = await ironicAt(minor);
    try {
      await new IronicClient({ endpoint: at.url }).listNodes({ scope: { [option]: value } });
      const [list] = at.requests('GET', '/v1/nodes/detail');
      assert.equal(new URL(list.url, at.url).searchParams.get(field), value, `${option} is sent as ${field}`);
    } finally {
      await at.close();
    }
  }
});

test("a node's history needs the version the table gives", async () => {
  const { history } = tables().versions;
  const below = await ironicAt(history - 1);
  const at = await ironicAt(history);
  try {
    await assert.rejects(new IronicClient({ endpoint: below.url }).getNodeHistory('n1'), UnsupportedVersionError);
    assert.equal(below.requests('GET', '/v1/nodes/*/history').length, 0);
    assert.ok(Array.isArray(await new IronicClient({ endpoint: at.url }).getNodeHistory('n1')));
  } finally {
    await below.close();
    await at.close();
  }
});

test('soft power actions need the version the table gives: Ironic refuses them just below it', async () => {
  const { softPower } = tables().versions;
  const below = await ironicAt(softPower - 1);
  const at = await ironicAt(softPower);
  try {
    const sent = await new IronicClient({ endpoint: below.url }).setPowerState(['n1'], 'soft power off', { settle: 'all' });
    assert.equal(sent.nodes[0].outcome, 'error');
    const accepted = await new IronicClient({ endpoint: at.url }).setPowerState(['n1'], 'soft power off', { settle: 'all' });
    assert.equal(accepted.nodes[0].outcome, 'accepted');
  } finally {
    await below.close();
    await at.close();
  }
});

'use strict';
// End-to-end tests of the Node client against the real origin and sidecar.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { setTimeout: sleep } = require('node:timers/promises');
const { LookaheadClient, CacheStatus, status } = require('../src');
const { startStack } = require('./harness');

const TREE_SIZE = 781; // db4o task tree: 5 levels of fan-out 5 below a root
const ROUND_TRIPS = 'lookahead_origin_round_trips_total';

// treeIds maps the ids of the seeded task tree below root to their level.
// Task k of a tree (its breadth-first index) is root.k, root itself for
// k = 0, and has the subtasks 5k+1 .. 5k+5.
function treeIds(root, levels = 5, fanout = 5) {
  const ids = new Map();
  let k = 0;
  for (let level = 0, width = 1; level < levels; level++, width *= fanout) {
    for (let i = 0; i < width; i++, k++) ids.set(k ? `${root}.${k}` : root, level);
  }
  return ids;
}

// walk activates a tree the way db4o does: one Get per object, breadth-first.
async function walk(client, root) {
  const got = [];
  const queue = [root];
  while (queue.length) {
    const id = queue.shift();
    const resp = await client.get(id);
    assert.equal(resp.object.id, id);
    got.push(resp);
    for (const r of resp.object.refs) if (r.field === 'subtasks') queue.push(r.id);
    assert.ok(got.length <= 10 * TREE_SIZE, 'walk does not terminate');
  }
  return got;
}

// settle waits until counter name has not moved for quietMs (in-flight
// prefetches done) and returns its value.
async function settle(stack, name = ROUND_TRIPS, quietMs = 300, limitMs = 10_000) {
  const deadline = Date.now() + limitMs;
  let last = await stack.counter(name);
  while (Date.now() < deadline) {
    await sleep(quietMs);
    const now = await stack.counter(name);
    if (now === last) return now;
    last = now;
  }
  throw new Error(`${name} still moving after ${limitMs} ms`);
}

async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('call succeeded, expected an error');
}

describe('lookahead sidecar over the Node client', () => {
  let stack;
  let client;

  before(async () => {
    stack = await startStack();
    client = new LookaheadClient(stack.target, { timeoutMs: 10_000 });
  });

  after(async () => {
    client?.close();
    await stack?.stop();
  });

  // The two walks share the cache, so they run in order in one test.
  it('walks a tree by Get, then walks it again from the cache alone', async (t) => {
    const before1 = await stack.counter(ROUND_TRIPS, false); // no sample before the first round trip
    const first = await walk(client, 'task-0');

    await t.test('first walk returns the 781 tasks of the tree', async () => {
      const ids = first.map((r) => r.object.id);
      assert.equal(ids.length, TREE_SIZE);
      assert.equal(new Set(ids).size, TREE_SIZE, 'an object came back twice');
      assert.deepEqual(new Set(ids), new Set(treeIds('task-0').keys()));
      // The counter is live: a cold walk had to reach the origin.
      assert.ok((await stack.counter(ROUND_TRIPS)) > before1);
    });

    await t.test('second walk is all hits and makes no origin round trip', async () => {
      const trips = await settle(stack);
      const hits = await stack.counter('lookahead_cache_hits_total');
      const misses = await stack.counter('lookahead_cache_misses_total');
      const second = await walk(client, 'task-0');
      assert.equal(second.length, TREE_SIZE);
      const notHits = second
        .filter((r) => r.status !== CacheStatus.HIT && r.status !== CacheStatus.HIT_PREFETCHED)
        .map((r) => `${r.object.id}: ${r.status}`);
      assert.deepEqual(notHits, []);
      assert.equal(await stack.counter(ROUND_TRIPS), trips);
      assert.equal((await stack.counter('lookahead_cache_hits_total')) - hits, TREE_SIZE);
      assert.equal(await stack.counter('lookahead_cache_misses_total'), misses);
    });
  });

  it('GetGraph with depth 4 streams the tree in breadth-first level order', async () => {
    const want = treeIds('task-1');
    const stream = client.getGraph(['task-1'], { depth: 4 });
    const results = await stream.toArray();
    const ids = results.map((r) => r.object.id);
    assert.equal(ids.length, TREE_SIZE);
    assert.equal(new Set(ids).size, TREE_SIZE, 'an object came back twice');
    assert.deepEqual(new Set(ids), new Set(want.keys()));
    const levels = results.map((r) => r.level);
    assert.deepEqual(levels, [...levels].sort((a, b) => a - b), 'levels out of breadth-first order');
    for (const r of results) assert.equal(r.level, want.get(r.object.id), `${r.object.id} at level ${r.level}`);
    assert.deepEqual([0, 1, 2, 3, 4].map((l) => levels.filter((x) => x === l).length), [1, 5, 25, 125, 625]);
    assert.deepEqual(stream.missingIds, []);
  });

  it('GetGraph can be left early', async () => {
    for await (const r of client.getGraph('task-1', { depth: 4 })) {
      assert.equal(r.object.id, 'task-1');
      assert.equal(r.level, 0);
      break;
    }
  });

  it('BatchGet lists missing ids and drops duplicates', async () => {
    const resp = await client.batchGet(['task-0.1', 'no-such-task', 'task-0.2', 'task-0.1']);
    assert.deepEqual(resp.results.map((r) => r.object.id), ['task-0.1', 'task-0.2']);
    assert.deepEqual(resp.missingIds, ['no-such-task']);
  });

  it('a depth 0 hint turns prefetching off for the request', async () => {
    const parent = await client.get('task-2.7', { depth: 0 });
    assert.equal(parent.status, CacheStatus.MISS);
    assert.deepEqual(parent.object.refs.map((r) => r.id), [36, 37, 38, 39, 40].map((k) => `task-2.${k}`));
    const child = await client.get('task-2.36', { depth: 0 });
    assert.equal(child.status, CacheStatus.MISS, 'the child was prefetched');
  });

  it('Get of a missing id fails with NOT_FOUND', async () => {
    const err = await rejection(client.get('no-such-task'));
    assert.equal(err.code, status.NOT_FOUND);
    assert.match(err.details, /no-such-task/);
  });

  it('Get with an empty id fails with INVALID_ARGUMENT', async () => {
    const err = await rejection(client.get(''));
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.match(err.details, /empty id/);
  });

  it('BatchGet of more than 1000 ids fails with INVALID_ARGUMENT', async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `task-0.${i}`);
    const err = await rejection(client.batchGet(ids));
    assert.equal(err.code, status.INVALID_ARGUMENT);
    assert.match(err.details, /ids: 1001 ids exceed the limit of 1000/);
  });

  it('connects over a unix socket', async () => {
    const uc = new LookaheadClient(`unix://${stack.unixSocket}`, { timeoutMs: 10_000 });
    try {
      const resp = await uc.get('task-2.5', { depth: 0 });
      assert.equal(resp.object.id, 'task-2.5');
      assert.deepEqual(resp.object.refs.map((r) => [r.field, r.id]),
        [26, 27, 28, 29, 30].map((k) => ['subtasks', `task-2.${k}`]));
    } finally {
      uc.close();
    }
  });

  it('Put, Get and Delete write through with expected versions', async () => {
    const id = `node-put-${process.pid}-${Date.now()}`;
    const obj = { id, type: 'Note', payload: Buffer.from('hello'), refs: [{ field: 'parent', id: 'task-0' }] };
    assert.equal(await client.put(obj, { expectedVersion: 0 }), '1'); // 0: must not exist yet
    const got = await client.get(id, { depth: 0 });
    assert.equal(got.object.payload.toString(), 'hello');
    assert.equal(got.object.version, '1');
    assert.deepEqual(got.object.refs.map((r) => [r.field, r.id]), [['parent', 'task-0']]);

    let err = await rejection(client.put(obj, { expectedVersion: 0 }));
    assert.equal(err.code, status.FAILED_PRECONDITION);
    assert.equal(await client.put({ ...obj, payload: Buffer.from('again') }, { expectedVersion: 1 }), '2');
    assert.equal((await client.get(id)).object.payload.toString(), 'again');

    err = await rejection(client.delete(id, { expectedVersion: 1 }));
    assert.equal(err.code, status.FAILED_PRECONDITION);
    await client.delete(id, { expectedVersion: '2' });
    err = await rejection(client.get(id));
    assert.equal(err.code, status.NOT_FOUND);
  });

  it('Invalidate drops the cached copy', async () => {
    await client.get('task-2.3', { depth: 0 });
    assert.equal((await client.get('task-2.3', { depth: 0 })).status, CacheStatus.HIT);
    assert.equal(await client.invalidate(['task-2.3', 'no-such-task']), 1);
    assert.equal((await client.get('task-2.3', { depth: 0 })).status, CacheStatus.MISS);
  });

  it('answers past the TTL carry the stale flag', async () => {
    const sc = new LookaheadClient(stack.staleSidecar.grpc, { timeoutMs: 10_000 });
    try {
      let resp = await sc.get('task-1.2', { depth: 0 });
      assert.equal(resp.stale, false, 'a fresh fetch is not stale');
      // Past the 100 ms TTL the sidecar answers its copy marked stale and
      // refetches it in the background: poll until an answer is stale.
      const deadline = Date.now() + 10_000;
      while (!resp.stale) {
        assert.ok(Date.now() < deadline, 'no stale answer within 10 s');
        await sleep(50);
        resp = await sc.get('task-1.2', { depth: 0 });
      }
      assert.equal(resp.object.id, 'task-1.2');
      assert.equal(resp.status, CacheStatus.HIT);
      const [r] = await sc.getGraph('task-1.2', { depth: 0 }).toArray();
      assert.equal(r.object.id, 'task-1.2');
      assert.equal(typeof r.stale, 'boolean');
    } finally {
      sc.close();
    }
  });
});

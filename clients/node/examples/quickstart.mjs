import { LookaheadClient, CacheStatus } from 'lookahead-client';

const client = new LookaheadClient(process.env.LOOKAHEAD_TARGET ?? '127.0.0.1:7070', { timeoutMs: 5000 });
try {
  const { object, status, stale } = await client.get('task-0');
  console.log(object.id, object.refs.map((r) => r.id).join(','), status === CacheStatus.MISS, stale);
  await client.get('task-0.1', { depth: 0 }); // no prefetch for this request
  for await (const r of client.getGraph(['task-0'], { depth: 2 })) {
    console.log(r.level, r.object.id, r.status); // breadth-first
  }
  const { results, missingIds } = await client.batchGet(['task-0.2', 'nope']);
  console.log(results.length, missingIds.join(','));

  const note = { id: 'note-1', type: 'Note', payload: Buffer.from('hi'), refs: [{ field: 'about', id: 'task-0' }] };
  const version = await client.put(note);
  console.log('note-1 version', version, 'invalidated', await client.invalidate(['note-1']));
  await client.delete('note-1', { expectedVersion: version });
} finally {
  client.close();
}

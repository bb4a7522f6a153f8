// A TypeScript user of the client: `npm run typecheck` (tsc --noEmit) checks
// it against src/index.d.ts, through the package's own name as an
// application resolves it.
import { LookaheadClient, CacheStatus, status, type GetResponse, type Result, type CacheStatusName } from 'lookahead-client';

async function main(target: string): Promise<number> {
  const client = new LookaheadClient(target, { timeoutMs: 5000 });
  try {
    const got: GetResponse = await client.get('task-0', { depth: 2, maxObjects: 100, fields: ['subtasks'] });
    const s: CacheStatusName = got.status;
    const fresh: boolean = !got.stale && s !== CacheStatus.MISS;
    const ids: string[] = got.object.refs.map((r) => r.id);

    const levels: number[] = [];
    const stream = client.getGraph(ids, { depth: 1 });
    for await (const r of stream) levels.push(r.level);
    const missing: string[] = stream.missingIds;

    const all: Result[] = await client.getGraph('task-0').toArray();
    const { results, missingIds } = await client.batchGet(['a', 'b'], { timeoutMs: 1000 });

    const version: string = await client.put({ id: 'n', payload: Buffer.from('x'), refs: [{ field: 'f', id: 'a' }] }, { expectedVersion: 0 });
    await client.delete('n', { expectedVersion: version });
    const dropped: number = await client.invalidate(['a']);
    try {
      await client.get('');
    } catch (err) {
      if ((err as { code?: number }).code === status.INVALID_ARGUMENT) return -1;
    }
    return levels.length + missing.length + all.length + results.length + missingIds.length + dropped + (fresh ? 1 : 0);
  } finally {
    client.close();
  }
}

void main(process.env.LOOKAHEAD_TARGET ?? '127.0.0.1:7070');

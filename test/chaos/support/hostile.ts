import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { queryFile } from './compare.js';
import type { HostileCase } from './hostile-cases.js';
import { type HostileServer, page, product, sendJson, startHostileServer } from './hostile-server.js';
import { CHAOS_TOKEN, runCli, writeConfig } from './processes.js';

/**
 * Scenario 4, hostile server: `store-sync sync --streams products` against one hostile response. It must
 * end in a clear error or in rejections, never a crash (a signal, a stack trace, an internal error), a
 * hang (the run is killed after 90 s and that fails the test), a loop (requests are counted) or a leak
 * (the token is searched for in stdout, stderr, the warehouse file, and the foreign origin's requests).
 */

/** What a crash looks like in output, as opposed to a message written for a person. */
const CRASH =
  /\n\s+at |TypeError|RangeError|ReferenceError|SyntaxError|Maximum call stack|Unhandled|uncaught|internal error/i;

export async function runHostileCase(
  hostile: HostileCase,
  dir: string,
  foreign: { server: HostileServer | null },
): Promise<void> {
  if (hostile.foreign)
    foreign.server = await startHostileServer((_req, res) => sendJson(res, page([product(99)])));
  const server = await startHostileServer(hostile.respond);
  try {
    const warehouse = path.join(dir, `${hostile.name.replace(/\W+/g, '-')}.duckdb`);
    const config = await writeConfig(dir, {
      baseUrl: `${server.origin}/api/`,
      warehouse,
      maxRetries: 2,
      timeoutSeconds: 10,
    });
    const result = await runCli(['sync', '--config', config, '--streams', 'products'], { timeoutMs: 90_000 });
    const output = `${result.stdout}\n${result.stderr}`;
    assert.equal(result.timedOut, false, `it hung (killed after 90 s); output:\n${output.slice(-1500)}`);
    assert.equal(result.signal, null, `it died of ${result.signal}`);
    assert.ok(
      hostile.codes.includes(result.code ?? -1),
      `exit ${result.code}, expected ${hostile.codes}:\n${output.slice(-1500)}`,
    );
    assert.doesNotMatch(output, CRASH, 'it crashed instead of saying what was wrong');
    if (hostile.message) assert.match(output, hostile.message);
    assert.ok(
      server.hits.length <= hostile.maxHits,
      `${server.hits.length} requests: a loop (at most ${hostile.maxHits})`,
    );
    assert.ok(!output.includes(CHAOS_TOKEN), 'the token was printed');
    if (foreign.server) {
      assert.equal(foreign.server.hits.length, 0, 'a request reached the foreign origin');
    }
    for (const file of [warehouse, `${warehouse}.wal`]) {
      if (existsSync(file))
        assert.ok(!(await readFile(file)).includes(CHAOS_TOKEN), `the token is stored in ${file}`);
    }
    if (hostile.loaded !== undefined) {
      const [row] = await queryFile(
        warehouse,
        `SELECT (SELECT count(*) FROM w.products WHERE _deleted_at IS NULL),
                (SELECT count(*) FROM w._rejected_records WHERE stream = 'products' AND length(reason) > 0)`,
      );
      assert.deepEqual(
        row!.map(Number),
        [hostile.loaded, hostile.rejected ?? 0],
        'products loaded, records rejected',
      );
    }
  } finally {
    await server.close();
    await foreign.server?.close();
    foreign.server = null;
  }
}

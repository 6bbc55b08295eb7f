import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Agent } from 'undici';
import { deliver } from '../../src/receive/send.js';
import { assertExit, BIN, readWarehouse, runCli, tempDir } from '../cli/helpers.js';
import { eventIds, orderEvent, SECRET, spooled } from './helpers.js';

/**
 * The receiver's promise under crashes: `store-sync receive` is SIGKILLed at 20 random moments (some while
 * it starts and recovers, most while six senders post order events, a few of them with a wrong signature)
 * and restarted each time; the senders retry some events that got no answer, as the platform does. After a
 * last restart and a drain into a new warehouse, every event that got a 200 is there exactly once, and none
 * that got a 401 is. RECEIVE_CRASH_ROUNDS and RECEIVE_CRASH_SEED change the rounds and the randomness.
 */

const ROUNDS = Number(process.env.RECEIVE_CRASH_ROUNDS ?? 20);
const SEED = Number(process.env.RECEIVE_CRASH_SEED ?? Date.now() % 1_000_000);
const SENDERS = 6;
const SECRET_ENV = 'STORE_SYNC_TEST_WEBHOOK_SECRET';

function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Receiver {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startReceiver(dir: string, spoolDir: string): Receiver {
  const child = spawn(
    process.execPath,
    [BIN, 'receive', '--secret-env', SECRET_ENV, '--spool-dir', spoolDir, '--port', '0', '--store', 'main'],
    { cwd: dir, env: { PATH: process.env.PATH, [SECRET_ENV]: SECRET }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => stderr, exited };
}

/** The endpoint's URL once the receiver listens, or null if it exited first. */
async function listening(receiver: Receiver): Promise<string | null> {
  let gone = false;
  void receiver.exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const url = /receive\.listening .*url=(\S+)/.exec(receiver.stderr())?.[1];
    if (url) return url;
    if (gone) return null;
    assert.ok(Date.now() < deadline, `the receiver did not start:\n${receiver.stderr()}`);
    await sleep(20);
  }
}

describe('store-sync receive under SIGKILL', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  it(`acknowledged events survive ${ROUNDS} kills exactly once, refused ones never load (seed ${SEED})`, async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const rnd = random(SEED);
    const acked = new Set<number>();
    const refused = new Set<number>();
    /** Sent with a good signature, no answer: maybe spooled, maybe not; the platform would retry. */
    const unknown = new Set<number>();
    let next = 1;
    let kills = 0;
    let tornTails = 0;

    for (let round = 0; round < ROUNDS; round++) {
      const receiver = startReceiver(dir, spoolDir);
      // One round in five is killed while it starts (and recovers what the last kill left).
      if (rnd() < 0.2) {
        await sleep(rnd() * 400);
      } else {
        const url = await listening(receiver);
        assert.ok(url, `round ${round}: the receiver exited before listening:\n${receiver.stderr()}`);
        // A fresh connection pool per round: the last round's sockets died with its receiver.
        const dispatcher = new Agent({ connections: SENDERS });
        let stop = false;
        const sender = async () => {
          while (!stop) {
            const retry = unknown.size > 0 && rnd() < 0.25;
            const n = retry ? [...unknown][Math.floor(rnd() * unknown.size)]! : next++;
            const bad = !retry && rnd() < 0.1;
            const status: number = await deliver(url, bad ? 'not-the-secret' : SECRET, orderEvent(n), {
              dispatcher,
            }).catch(() => 0);
            if (bad) {
              // A refused event is never sent again with a good signature.
              assert.ok(status === 401 || status === 0, `a badly signed event got ${status}`);
              refused.add(n);
            } else if (status === 200) {
              acked.add(n);
              unknown.delete(n);
            } else {
              assert.equal(status, 0, `event ${n} got ${status}`);
              unknown.add(n);
            }
          }
        };
        const senders = Array.from({ length: SENDERS }, sender);
        await sleep(50 + rnd() * 500);
        receiver.child.kill('SIGKILL');
        await receiver.exited;
        stop = true;
        await Promise.all(senders);
        await dispatcher.destroy();
      }
      receiver.child.kill('SIGKILL');
      const { signal } = await receiver.exited;
      if (signal === 'SIGKILL') kills++;
      tornTails += (receiver.stderr().match(/receive\.torn_tail_dropped/g) ?? []).length;
    }

    // A last start recovers what the last kill left; SIGTERM then closes every file for the drain.
    const last = startReceiver(dir, spoolDir);
    assert.ok(await listening(last));
    tornTails += (last.stderr().match(/receive\.torn_tail_dropped/g) ?? []).length;
    last.child.kill('SIGTERM');
    assert.equal((await last.exited).code, 0, last.stderr());

    // Deduplication held across the restarts: no event is in the spool twice.
    const ids = eventIds(await spooled(spoolDir));
    assert.equal(new Set(ids).size, ids.length, 'an event was spooled twice');

    const warehouse = path.join(dir, 'warehouse.duckdb');
    const drained = await runCli(
      ['ingest', '--spool', spoolDir, '--warehouse', warehouse, '--store', 'main'],
      {
        cwd: dir,
      },
    );
    assertExit(drained, 0);
    const orders = (
      await readWarehouse<{ number: string; n: bigint }>(
        warehouse,
        'SELECT number, count(*) AS n FROM orders GROUP BY number',
      )
    ).map((r) => ({ number: Number(r.number), n: Number(r.n) }));
    const loaded = new Set(orders.map((o) => o.number));
    const missing = [...acked].filter((n) => !loaded.has(n));
    assert.deepEqual(missing, [], `acknowledged events missing from the warehouse (seed ${SEED})`);
    assert.ok(
      orders.every((o) => o.n === 1),
      'an order is in the warehouse twice',
    );
    const wrongly = [...refused].filter((n) => loaded.has(n));
    assert.deepEqual(wrongly, [], `refused events in the warehouse (seed ${SEED})`);
    const strangers = [...loaded].filter((n) => !acked.has(n) && !unknown.has(n));
    assert.deepEqual(strangers, [], 'orders that were never sent with a good signature');
    // Each spooled event was read once: the ledger's documents are the orders, and nothing was rejected.
    const [ledger] = await readWarehouse<{ documents: bigint; rejected: bigint }>(
      warehouse,
      'SELECT sum(documents) AS documents, sum(rejected) AS rejected FROM _ingested_files',
    );
    assert.equal(Number(ledger!.documents), ids.length);
    assert.equal(Number(ledger!.rejected), 0);
    assert.equal(loaded.size, ids.length);
    assert.ok(acked.size > ROUNDS, `only ${acked.size} events were acknowledged over ${ROUNDS} rounds`);
    assert.ok(refused.size > 0, 'no refused event was tried');
    process.stderr.write(
      `# receive crash test (seed ${SEED}): ${kills} kills, ${acked.size} acknowledged, ${refused.size} refused, ${unknown.size} unanswered, ${tornTails} torn tails dropped\n`,
    );
  });
});

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { CODEC, decodeBlock, storedBlocks } from '../../src/load/landing.js';
import {
  assertExit,
  type CliResult,
  killChildren,
  runCli,
  TOKEN_ENV,
  tempDir,
  writeConfig,
} from './helpers.js';

/**
 * Token echoed escaped (docs/reliability.md, "Hardening"): a server that echoes the token back, spelled as
 * JSON allows (PHP's `\/`, `\u` escapes in either case, a mix), must not get it into a table, the raw
 * landing, the Parquet export, stderr or `_sync_runs`, whether it echoes it in a record or in an error body.
 */

// `/`, `+`, `=`, a quote, a backslash and a non-ASCII letter (latin-1: it must fit an Authorization header).
const ECHO_TOKEN = 'pk_live/Ab+Cd/9xYz=="\\é';

/** Every JSON escape undone, up to three levels deep: what any reader that decodes the text would see. */
function unescapeJson(text: string): string {
  const short: Record<string, string> = {
    '"': '"',
    '\\': '\\',
    '/': '/',
    b: '\b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
  };
  let out = text;
  for (let level = 0; level < 3; level++)
    out = out.replace(/\\+(u[0-9a-fA-F]{4}|["\\/bfnrt])/g, (_, e: string) =>
      e[0] === 'u' && e.length === 5 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : short[e]!,
    );
  return out;
}

const leaks = (text: string) => text.includes(ECHO_TOKEN) || unescapeJson(text).includes(ECHO_TOKEN);

const hex = (unit: number, upper: boolean) => {
  const h = unit.toString(16).padStart(4, '0');
  return `\\u${upper ? h.toUpperCase() : h}`;
};
/** A string as JSON text: as JSON.stringify writes it, as PHP does (`\/`), all `\u` (mixed case), a mix. */
const SPELLINGS: ((s: string) => string)[] = [
  (s) => JSON.stringify(s),
  (s) => JSON.stringify(s).replace(/\//g, '\\/'),
  (s) => `"${Array.from({ length: s.length }, (_, i) => hex(s.charCodeAt(i), i % 2 === 0)).join('')}"`,
  (s) =>
    `"${Array.from({ length: s.length }, (_, i) =>
      i % 2 === 1 ? hex(s.charCodeAt(i), true) : JSON.stringify(s[i]).slice(1, -1).replace('/', '\\/'),
    ).join('')}"`,
];

/** The text of every value in a tree of rows, for the leak check (bigints as digits). */
const textOf = (value: unknown) =>
  JSON.stringify(value, (_k, v) =>
    typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v,
  );

describe('a server echoing the token, escaped', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let server: Server;
  let baseUrl: string;
  let config: string;
  let warehouse: string;
  const runs: CliResult[] = [];
  const run = async (args: string[]) => {
    const result = await runCli(args, { env: { [TOKEN_ENV]: ECHO_TOKEN } });
    runs.push(result);
    return result;
  };

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    server = createServer((req, res) => {
      // What the server got: Node decodes a header as latin-1, so é comes back as é.
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/api/locations/') {
        const items = SPELLINGS.flatMap((spell, i) => [
          `{"id": ${i * 3 + 1}, "name": ${spell(`echo ${token}`)}, "address": {"city": ${spell(token)}, "country": "NL"}}`,
          `{"id": ${i * 3 + 2}, "name": "fine", ${spell(token)}: ${spell(`${token} again ${token}`)}}`,
          // Rejected (an id that is not one): its payload and reason go to _rejected_records.
          `{"id": ${spell(token)}, "name": ${spell(token)}}`,
        ]);
        const body = `{"next": null, "previous": null, "results": [${items.join(', ')}]}`;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        return res.end(body);
      }
      // Every other endpoint refuses the request, quoting the token \u-escaped and PHP-escaped.
      const body = `{"error": {"code": "bad", "message": "no such key ${SPELLINGS[2]!(token).slice(1, -1)} (${SPELLINGS[1]!(token).slice(1, -1)})"}}`;
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
    warehouse = path.join(dir, 'echo.duckdb');
    config = await writeConfig(dir, {
      warehouse,
      parquetDir: path.join(dir, 'parquet'),
      stores: [{ name: 'echo', baseUrl }],
    });
  });

  after(async () => {
    killChildren();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await cleanup?.();
  });

  it('records echoing it load with it masked: tables, rejections, raw landing, Parquet, output', async () => {
    const result = await run(['sync', '--config', config, '--streams', 'locations', '--log-format', 'json']);
    assertExit(result, 3); // completed with rejections: the records whose id is the token
    assertExit(await run(['export', '--config', config]), 0);

    const instance = await DuckDBInstance.create(warehouse, { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    try {
      const rows = async (sql: string) => (await connection.runAndReadAll(sql)).getRowObjectsJS();
      const locations = await rows('SELECT * FROM locations ORDER BY 1');
      assert.equal(locations.length, SPELLINGS.length * 2);
      assert.ok(!leaks(textOf(locations)), textOf(locations));
      assert.ok(
        locations.some((l) => l.name === 'echo ***'),
        textOf(locations),
      );
      const rejected = await rows('SELECT * FROM _rejected_records');
      assert.equal(rejected.length, SPELLINGS.length);
      assert.ok(!leaks(textOf(rejected)), textOf(rejected));
      const runsRows = await rows('SELECT outcome, counts, error FROM _sync_runs');
      assert.ok(!leaks(textOf(runsRows)), textOf(runsRows));
      // Every landed record, decompressed.
      const seqs = (await rows('SELECT first_seq FROM _raw_landing ORDER BY 1')).map((r) =>
        Number(r.first_seq),
      );
      assert.ok(seqs.length > 0);
      const blocks = await storedBlocks(connection, seqs);
      let landed = 0;
      for (const seq of seqs)
        for (const record of (await decodeBlock(CODEC, blocks.get(seq)!)).records) {
          const text = record.bytes.toString('utf8');
          assert.ok(!leaks(text), `landed: ${text}`);
          if (record.kind === 'record') landed++;
        }
      assert.equal(landed, SPELLINGS.length * 2);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    for (const file of [warehouse, `${warehouse}.wal`]) {
      const bytes = await readFile(file).catch(() => Buffer.alloc(0));
      assert.ok(!bytes.includes(Buffer.from(ECHO_TOKEN, 'utf8')), `the token is in ${file}`);
    }
    // The Parquet export, read back with an independent reader.
    const parquetDir = path.join(dir, 'parquet');
    const files = (await readdir(parquetDir, { recursive: true })).filter((f) => f.endsWith('.parquet'));
    assert.ok(
      files.some((f) => f.startsWith('locations')),
      files.join(', '),
    );
    for (const file of files) {
      const read = await parquetReadObjects({ file: await asyncBufferFromFile(path.join(parquetDir, file)) });
      assert.ok(!leaks(textOf(read)), `${file}: ${textOf(read)}`);
    }
  });

  it('an error body echoing it \\u-escaped reaches neither stderr nor _sync_runs.error', async () => {
    const result = await run(['sync', '--config', config, '--streams', 'products']);
    assertExit(result, 1);
    assert.match(result.stderr, /^error: .*no such key \*\*\* \(\*\*\*\)/m);
    const instance = await DuckDBInstance.create(warehouse, { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    try {
      const [last] = (
        await connection.runAndReadAll(
          "SELECT error FROM _sync_runs WHERE outcome = 'failed' ORDER BY started_at DESC LIMIT 1",
        )
      ).getRowObjectsJS();
      assert.match(String(last?.error), /no such key \*\*\*/);
      assert.ok(!leaks(String(last?.error)));
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it('nothing any run printed holds the token in any spelling', () => {
    assert.ok(runs.length >= 3);
    for (const r of runs) {
      assert.ok(!leaks(r.stdout), `stdout of ${r.args.join(' ')}: ${r.stdout}`);
      assert.ok(!leaks(r.stderr), `stderr of ${r.args.join(' ')}: ${r.stderr}`);
    }
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decideLedger,
  type LedgerDecision,
  type LedgerEntry,
  type LedgerEvidence,
  type LedgerInput,
  sameTime,
  streamLedgerKey,
} from '../../src/ingest/ledger-decision.js';

/**
 * The ledger's decision for one input, every branch: each case gives the file as it is now, its entry, and
 * the facts read from the file so far, and expects the decision. A case whose evidence is missing expects
 * the question the decision asks first, so that no fact is read that the decision does not need (an
 * unchanged file is skipped without being opened).
 */

const T = Date.UTC(2024, 4, 1, 10, 0, 0);
const HASH = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);

const complete: LedgerEntry = {
  size: 1000,
  mtimeMs: T,
  sha256: HASH,
  status: 'complete',
  byteOffset: 1000,
  line: 20,
  documents: 19,
  rejected: 1,
};
/** A run stopped inside the file: at byte 400, line 8, with the hash of those 400 bytes. */
const partial: LedgerEntry = {
  size: 1000,
  mtimeMs: T,
  sha256: HASH,
  status: 'partial',
  byteOffset: 400,
  line: 8,
  documents: 7,
  rejected: 0,
};
const file = (size: number, mtimeMs = T, stream = false): LedgerInput => ({ size, mtimeMs, stream });
const from = (entry: LedgerEntry) => ({
  byteOffset: entry.byteOffset,
  line: entry.line,
  documents: entry.documents,
  rejected: entry.rejected,
});
const LOAD: LedgerDecision = { action: 'load' };

interface Case {
  name: string;
  input: LedgerInput;
  entry: LedgerEntry | null;
  evidence?: LedgerEvidence;
  expected: LedgerDecision;
}

const CASES: Case[] = [
  // No entry, or read in one pass.
  { name: 'a new file', input: file(500), entry: null, expected: LOAD },
  { name: 'stdin or a pipe, even with an entry', input: file(0, T, true), entry: complete, expected: LOAD },

  // A complete entry of the same size.
  {
    name: 'unchanged: same size and time',
    input: file(1000),
    entry: complete,
    expected: { action: 'skip', by: 'time' },
  },
  {
    name: 'unchanged: the time differs below a millisecond',
    input: file(1000, T + 0.7),
    entry: complete,
    expected: { action: 'skip', by: 'time' },
  },
  {
    name: 'touched: asks for the content hash',
    input: file(1000, T + 5000),
    entry: complete,
    expected: { action: 'check', evidence: 'content_hash', bytes: 1000 },
  },
  {
    name: 'touched, same content: skipped by its content',
    input: file(1000, T + 5000),
    entry: complete,
    evidence: { contentSha256: HASH },
    expected: { action: 'skip', by: 'content' },
  },
  {
    name: 'rewritten in place (same size, other content): read whole',
    input: file(1000, T + 5000),
    entry: complete,
    evidence: { contentSha256: OTHER },
    expected: LOAD,
  },
  {
    name: 'touched, and the entry has no hash: read whole without hashing',
    input: file(1000, T + 5000),
    entry: { ...complete, sha256: null },
    expected: LOAD,
  },

  // A complete entry of another size.
  { name: 'truncated: read whole', input: file(600, T + 5000), entry: complete, expected: LOAD },
  {
    name: 'grown: asks what its first bytes are now',
    input: file(1500, T + 5000),
    entry: complete,
    expected: { action: 'check', evidence: 'appended_prefix', bytes: 1000 },
  },
  {
    name: 'appended to (the old content ends a line): resumed where the entry ends',
    input: file(1500, T + 5000),
    entry: complete,
    evidence: { appendedPrefix: { sha256: HASH, endsLine: true, lastLine: null } },
    expected: { action: 'resume', from: from(complete), why: 'appended' },
  },
  {
    name: 'appended to after a last line that was a whole document: resumed',
    input: file(1500, T + 5000),
    entry: complete,
    evidence: { appendedPrefix: { sha256: HASH, endsLine: false, lastLine: '{"id": 3}' } },
    expected: { action: 'resume', from: from(complete), why: 'appended' },
  },
  {
    name: 'appended to after a cut-short last line (rejected then): read whole',
    input: file(1500, T + 5000),
    entry: complete,
    evidence: { appendedPrefix: { sha256: HASH, endsLine: false, lastLine: '{"id": 3, "na' } },
    expected: LOAD,
  },
  {
    name: 'appended to after a last line too long to keep (or gzip): read whole',
    input: file(1500, T + 5000),
    entry: complete,
    evidence: { appendedPrefix: { sha256: HASH, endsLine: false, lastLine: null } },
    expected: LOAD,
  },
  {
    name: 'grown, with other first bytes: read whole',
    input: file(1500, T + 5000),
    entry: complete,
    evidence: { appendedPrefix: { sha256: OTHER, endsLine: true, lastLine: null } },
    expected: LOAD,
  },
  {
    name: 'grown, and the entry has no hash: read whole without reading its first bytes',
    input: file(1500, T + 5000),
    entry: { ...complete, sha256: null },
    expected: LOAD,
  },

  // A partial entry: a run stopped inside the file.
  {
    name: 'stopped inside, file unchanged: resumed from the position',
    input: file(1000),
    entry: partial,
    expected: { action: 'resume', from: from(partial), why: 'stopped' },
  },
  {
    name: 'stopped inside, killed (no hash), file unchanged: still resumed',
    input: file(1000),
    entry: { ...partial, sha256: null },
    expected: { action: 'resume', from: from({ ...partial, sha256: null }), why: 'stopped' },
  },
  {
    name: 'stopped inside, then grew: asks for the hash of the bytes that run read',
    input: file(1800, T + 5000),
    entry: partial,
    expected: { action: 'check', evidence: 'read_prefix_hash', bytes: 400 },
  },
  {
    name: 'stopped inside, then grew, same bytes before the position: resumed',
    input: file(1800, T + 5000),
    entry: partial,
    evidence: { readPrefixSha256: HASH },
    expected: { action: 'resume', from: from(partial), why: 'stopped_then_grew' },
  },
  {
    name: 'stopped inside, touched only (same size, same bytes before the position): resumed',
    input: file(1000, T + 5000),
    entry: partial,
    evidence: { readPrefixSha256: HASH },
    expected: { action: 'resume', from: from(partial), why: 'stopped_then_grew' },
  },
  {
    name: 'stopped inside, then changed before the position: read whole',
    input: file(1800, T + 5000),
    entry: partial,
    evidence: { readPrefixSha256: OTHER },
    expected: LOAD,
  },
  {
    name: 'stopped inside a gzipped file, then changed (no prefix hash for gzip): read whole',
    input: file(1800, T + 5000),
    entry: partial,
    evidence: { readPrefixSha256: null },
    expected: LOAD,
  },
  {
    name: 'stopped inside, then truncated before the position: read whole without hashing',
    input: file(300, T + 5000),
    entry: partial,
    expected: LOAD,
  },
  {
    name: 'stopped inside, then truncated, still past the position: asks for the hash',
    input: file(500, T + 5000),
    entry: partial,
    expected: { action: 'check', evidence: 'read_prefix_hash', bytes: 400 },
  },
  {
    name: 'killed inside (no hash), then changed: read whole',
    input: file(1800, T + 5000),
    entry: { ...partial, sha256: null },
    expected: LOAD,
  },
];

describe('the ledger decision', () => {
  for (const c of CASES)
    it(c.name, () => {
      assert.deepEqual(decideLedger(c.input, c.entry, c.evidence), c.expected);
    });

  it('decides once the one fact it asked for is given, whatever it is', () => {
    const answers: Record<string, LedgerEvidence[]> = {
      content_hash: [{ contentSha256: HASH }, { contentSha256: OTHER }],
      read_prefix_hash: [{ readPrefixSha256: HASH }, { readPrefixSha256: OTHER }, { readPrefixSha256: null }],
      appended_prefix: [
        { appendedPrefix: { sha256: HASH, endsLine: true, lastLine: null } },
        { appendedPrefix: { sha256: OTHER, endsLine: false, lastLine: '{' } },
      ],
    };
    let asked = 0;
    for (const c of CASES) {
      const first = decideLedger(c.input, c.entry, c.evidence);
      if (first.action !== 'check') continue;
      asked++;
      for (const answer of answers[first.evidence]!)
        assert.notEqual(decideLedger(c.input, c.entry, { ...c.evidence, ...answer }).action, 'check', c.name);
    }
    assert.equal(asked, 4);
  });
});

describe('the ledger keys and times', () => {
  it('names stdin by its content, and a pipe by its content and path', () => {
    assert.equal(streamLedgerKey('-', HASH), `stdin:${HASH}`);
    assert.equal(streamLedgerKey('/dev/fd/63', HASH), `stream:${HASH}:/dev/fd/63`);
  });

  it('compares modification times at millisecond precision', () => {
    assert.equal(sameTime(T + 0.2, T + 0.9), true);
    assert.equal(sameTime(T, T + 1), false);
  });
});

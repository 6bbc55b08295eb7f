import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  pythonJsonDumps,
  pythonNumber,
  signatureBytes,
  signHex,
  verifySignature,
} from '../../src/receive/signature.js';

/**
 * The re-serialised form the platform signs: `json.dumps(json.loads(body))` with Python's defaults. The
 * expected strings below were written by CPython 3 (json.dumps); when python3 is on the machine, random
 * documents are also compared with it directly.
 */

const GOLDEN: [string, string][] = [
  [
    '{"b":1,"a":2,"10":3,"2":4,"1":{"z":[1,2,{"y":null}],"é":"ü"}}',
    '{"b": 1, "a": 2, "10": 3, "2": 4, "1": {"z": [1, 2, {"y": null}], "\\u00e9": "\\u00fc"}}',
  ],
  [
    '{"name":"Zoë Ørsted","city":"Москва","emoji":"😀 tea","cjk":"茶","esc":"a\\"b\\\\c\\n\\t\\u0001\\u007f/","slash":"\\/"}',
    '{"name": "Zo\\u00eb \\u00d8rsted", "city": "\\u041c\\u043e\\u0441\\u043a\\u0432\\u0430", "emoji": "\\ud83d\\ude00 tea", "cjk": "\\u8336", "esc": "a\\"b\\\\c\\n\\t\\u0001\\u007f/", "slash": "/"}',
  ],
  [
    '[1.0, 1.5e-7, 0.0001, 0.00001, 1e16, 1e15, 123456789012345678901234567890, -0, -0.0, 1E2, 2.5e+20, 1e400, -1e400, 5e-324, 0.1, 100.25, 12345678901234567.5]',
    '[1.0, 1.5e-07, 0.0001, 1e-05, 1e+16, 1000000000000000.0, 123456789012345678901234567890, 0, -0.0, 100.0, 2.5e+20, Infinity, -Infinity, 5e-324, 0.1, 100.25, 1.2345678901234568e+16]',
  ],
  [
    '{\n  "nested": {"deep": {"deeper": [true, false, null, "x"]}},\n  "empty": {}, "arr": []\n}',
    '{"nested": {"deep": {"deeper": [true, false, null, "x"]}}, "empty": {}, "arr": []}',
  ],
];

const hasPython = spawnSync('python3', ['-c', 'import json'], { stdio: 'ignore' }).status === 0;

describe('the re-serialised form (Python json.dumps defaults)', () => {
  it('matches what CPython writes: key order, integer-like names, non-ASCII, escapes, numbers', () => {
    for (const [input, expected] of GOLDEN) assert.equal(pythonJsonDumps(input), expected, input);
  });

  it('signs as the platform does (HMAC-SHA256 hex of the re-serialised payload, computed by CPython)', () => {
    const secret = 'whsec_test_0123';
    const body = '{"event_id":"evt_1","data":{"number":"1001","name":"Jörg"},"api_version":"2024-04-01"}';
    const python = '27e1db699ad3146060599356c02bd435b33ec43af731b781c0dca376900e85b5';
    const raw = '2a511c6bdf096dd8fb46ece378bce404183d7fa9a71a756260d0a7e90e9668f8';
    assert.equal(signHex(secret, pythonJsonDumps(body)!), python);
    assert.equal(signHex(secret, body), raw);
    const text = () => body;
    assert.equal(verifySignature([secret], Buffer.from(body), signatureBytes(python)!, text), 'python');
    assert.equal(verifySignature([secret], Buffer.from(body), signatureBytes(raw)!, text), 'raw');
    assert.equal(verifySignature(['other', secret], Buffer.from(body), signatureBytes(raw)!, text), 'raw');
    assert.equal(verifySignature(['other'], Buffer.from(body), signatureBytes(python)!, text), null);
  });

  it('does not reproduce an object that repeats a name (Python keeps the first place, the last value)', () => {
    assert.equal(pythonJsonDumps('{"a":1,"b":2,"a":3}'), null);
    assert.equal(pythonJsonDumps('[{"a":1},{"a":2}]'), '[{"a": 1}, {"a": 2}]');
  });

  it('costs no stack on deep nesting and handles a 5 MB string', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    assert.equal(pythonJsonDumps(deep), deep);
    const long = `{"a":"${'é'.repeat(2_500_000)}"}`;
    assert.equal(pythonJsonDumps(long)?.length, 9 + 6 * 2_500_000);
  });

  it('writes floats as repr does', () => {
    const cases: [string, string][] = [
      ['0.5', '0.5'],
      ['1e-4', '0.0001'],
      ['9.999e-5', '9.999e-05'],
      ['1e22', '1e+22'],
      ['123.0', '123.0'],
      ['1.7976931348623157e308', '1.7976931348623157e+308'],
      ['-1e-400', '-0.0'],
      ['0e0', '0.0'],
      ['-12', '-12'],
    ];
    for (const [token, expected] of cases) assert.equal(pythonNumber(token), expected, token);
  });

  it('reads a signature header: hex, any case, an optional sha256= prefix; anything else is none', () => {
    const hex = 'ab'.repeat(32);
    assert.deepEqual(signatureBytes(hex), Buffer.from(hex, 'hex'));
    assert.deepEqual(signatureBytes(` SHA256=${hex.toUpperCase()} `), Buffer.from(hex, 'hex'));
    for (const bad of [undefined, '', 'ab'.repeat(31), `${hex}00`, 'zz'.repeat(32), [hex, hex]])
      assert.equal(signatureBytes(bad as string | undefined), null);
  });

  it('agrees with python3 on random documents', { skip: !hasPython && 'python3 is not installed' }, () => {
    const number = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
      fc.integer().map(String),
      fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
      fc.constantFrom('1e400', '-0', '-0.0', '1E2', '1e-5', '1e16', '5e-324', '0.1', '2.5e+20'),
    );
    const name = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.constantFrom('1', '0', '10', 'é', '😀', '\u007f'),
    );
    const { value } = fc.letrec<{ value: string }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        number,
        fc.string({ unit: 'binary' }).map((s) => JSON.stringify(s)),
        fc.constantFrom('true', 'false', 'null'),
        fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(' , ')}]`),
        fc
          .uniqueArray(fc.tuple(name, tie('value')), { maxLength: 4, selector: ([k]) => k })
          .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',\n')}}`),
      ),
    }));
    const samples = fc.sample(value, 2000);
    const out = execFileSync(
      'python3',
      [
        '-c',
        'import json,sys\nfor doc in sys.stdin.read().split("\\x1e"): sys.stdout.write(json.dumps(json.loads(doc)) + "\\x1e")',
      ],
      { input: samples.join('\x1e'), maxBuffer: 1 << 28 },
    )
      .toString()
      .split('\x1e');
    for (const [i, sample] of samples.entries()) assert.equal(pythonJsonDumps(sample), out[i], sample);
  });
});

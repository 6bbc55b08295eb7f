import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { toDecimal, toTimestamp, ValueError } from '../../src/normalize/index.js';
import { Rng } from '../../src/sandbox/model/random.js';
import { tableRows, tempWarehouse } from './helpers.js';

/** Exact values: money into DECIMAL and times into TIMESTAMPTZ, never rounded, truncated or coerced. */

describe('decimal text into DECIMAL(12,2)', () => {
  const fits: [string, number][] = [
    ['0', 0],
    ['-0.50', -50],
    ['9999999999.99', 999999999999],
    ['.5', 50],
    ['1.', 100],
    ['1.230', 123],
    ['-0', 0],
  ];
  for (const [text, scaled] of fits) {
    it(`"${text}" is stored exactly`, () => assert.equal(toDecimal(text, 12, 2), scaled));
  }
  const refused = ['1.234', '', '10000000000.00', '1e5', ' 1', '1,5', '-', '.', 'NaN', '+1'];
  for (const text of refused) {
    it(`"${text}" is refused, not rounded`, () => {
      assert.throws(
        () => toDecimal(text, 12, 2),
        (e: unknown) => e instanceof ValueError && /DECIMAL\(12,2\)/.test(e.expected),
      );
    });
  }
  it('refuses a JSON number (money is decimal text in the API)', () => {
    assert.throws(() => toDecimal(12.5, 12, 2), ValueError);
  });
  it('keeps every digit of the widest DECIMAL(18,3) values', () => {
    assert.equal(toDecimal('999999999999999.999', 18, 3), 999999999999999999n);
    assert.equal(toDecimal('-123456789012345.678', 18, 3), -123456789012345678n);
    assert.throws(() => toDecimal('1000000000000000', 18, 3), ValueError);
  });
});

describe('timestamps into TIMESTAMPTZ', () => {
  it('converts offsets to UTC microseconds', () => {
    assert.equal(toTimestamp('2024-05-01T10:00:00Z'), Date.UTC(2024, 4, 1, 10) * 1000);
    assert.equal(toTimestamp('2024-05-01T12:00:00+02:00'), Date.UTC(2024, 4, 1, 10) * 1000);
    assert.equal(toTimestamp('2024-05-01T10:00:00.123456Z'), Date.UTC(2024, 4, 1, 10) * 1000 + 123456);
    assert.equal(toTimestamp('2024-05-01T10:00:00.120000000Z'), Date.UTC(2024, 4, 1, 10) * 1000 + 120000);
  });
  it('reads every spelling alike: 5,000 random date-times, each as Z, ±HH:MM, ±HHMM, t, space, fractions', () => {
    const rng = new Rng(11);
    const pad = (n: number, w = 2) => String(n).padStart(w, '0');
    for (let i = 0; i < 5000; i++) {
      const [y, mo, d] = [rng.int(1900, 2200), rng.int(1, 12), rng.int(1, 28)];
      const [h, mi, sec] = [rng.int(0, 23), rng.int(0, 59), rng.int(0, 59)];
      const digits = rng.int(0, 9);
      const kept = Math.min(digits, 6);
      const fraction =
        digits === 0
          ? ''
          : String(rng.int(0, 10 ** kept - 1))
              .padStart(kept, '0')
              .padEnd(digits, '0');
      const micros = Number(fraction.slice(0, 6).padEnd(6, '0'));
      const offset = rng.int(-23 * 60 - 59, 23 * 60 + 59);
      const zone = `${offset < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
      const utc = (Date.UTC(y, mo - 1, d, h, mi, sec) - offset * 60_000) * 1000 + micros;
      const base = `${y}-${pad(mo)}-${pad(d)}T${pad(h)}:${pad(mi)}:${pad(sec)}${fraction ? `.${fraction}` : ''}`;
      for (const text of [
        `${base}${zone}`,
        `${base}${zone.replace(':', '')}`,
        `${base.replace('T', ' ')}${zone}`,
        base.replace('T', 't') + zone,
      ])
        assert.equal(toTimestamp(text), utc, text);
      const inUtc = Date.UTC(y, mo - 1, d, h, mi, sec) * 1000 + micros;
      assert.equal(toTimestamp(`${base}Z`), inUtc, `${base}Z`);
      assert.equal(toTimestamp(`${base}z`), inUtc, `${base}z`);
    }
    assert.equal(toTimestamp('2024-05-01T10:00Z'), Date.UTC(2024, 4, 1, 10) * 1000, 'no seconds');
  });
  for (const bad of [
    '2024-05-01T10:00:00+24:00',
    '2024-05-01T10:00:00+02:60',
    '2024-05-01T10:00:00.Z',
    '2024-05-01T10:00:00.1234567891Z',
    '2024-05-01T10:00:00Z ',
    '2024-05-01T1a:00:00Z',
    '2024-02-29T00:00:00Z'.replace('2024', '2023'),
    '2024-05-01T10:00:00',
    '2024-02-30T00:00:00Z',
    '2024-05-01T10:00:00.1234567Z',
    'yesterday',
    '2024-13-01T00:00:00Z',
  ]) {
    it(`refuses ${bad}`, () => assert.throws(() => toTimestamp(bad), ValueError));
  }
});

describe('money edge cases through the warehouse', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  const costs: (string | null)[] = ['0', '-0.50', '9999999999.99', '.5', '1.', '1.234', '', null];

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
    const records = costs.map((unit_cost, i) => ({
      id: i + 1,
      title: `P${i}`,
      variants: [{ id: 100 + i, unit_cost }],
    }));
    const result = await warehouse.commitPage({
      store: 'shop',
      stream: 'products',
      entity: 'product',
      runId: 'money',
      records,
      rejections: [],
      state: emptyStreamState(),
    });
    assert.equal(result.rejections, 2);
  });
  after(() => cleanup());

  it('stores the values that fit, exactly, and NULL for null', async () => {
    const rows = await tableRows(warehouse.connection, 'variants');
    assert.deepEqual(
      rows.map((r) => [r.id, r.unit_cost]),
      [
        [100, '0.00'],
        [101, '-0.50'],
        [102, '9999999999.99'],
        [103, '0.50'],
        [104, '1.00'],
        // Refused (field rejections below): the variant loads with unit_cost NULL, the text in `_extra`.
        [105, null],
        [106, null],
        [107, null],
      ],
    );
    assert.deepEqual(
      rows.map((r) => r._extra ?? null),
      [null, null, null, null, null, '{"unit_cost":"1.234"}', '{"unit_cost":""}', null],
    );
  });

  it('rejects the others at field level, with the field path, the value and what was expected', async () => {
    const rows = await tableRows(warehouse.connection, '_rejected_records', {
      exclude: ['_synced_at', '_run_id', 'payload'],
    });
    rows.sort((a, b) => String(a.key).localeCompare(String(b.key)));
    assert.deepEqual(
      rows.map((r) => [r.key, r.stage, r.stream, r.level, r.field_path]),
      [
        ['6', 'normalize', 'products', 'field', 'variants[0].unit_cost'],
        ['7', 'normalize', 'products', 'field', 'variants[0].unit_cost'],
      ],
    );
    assert.match(
      String(rows[0]!.reason),
      /^variants: variants\[0\]\.unit_cost: got "1\.234", expected .*DECIMAL\(12,2\).*never rounded/,
    );
    assert.match(String(rows[1]!.reason), /^variants: variants\[0\]\.unit_cost: got "", expected /);
    const products = await tableRows(warehouse.connection, 'products');
    assert.deepEqual(
      products.map((p) => p.id),
      [1, 2, 3, 4, 5, 6, 7, 8],
      'a field rejection loads the record',
    );
  });
});

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiClient } from '../../src/extract/index.js';
import { keepResultTexts, receivedText, resultSpans } from '../../src/extract/received-text.js';
import { startServer, type TestServer } from './helpers.js';

/** Each element of `results` as the scan slices it, parsed back, must equal what JSON.parse made of it. */
function slicesOf(body: string): string[] {
  const spans = resultSpans(body);
  assert.ok(spans, `no spans found in ${body}`);
  return spans.map((s) => body.slice(s.start, s.end));
}

test('the scan finds each record of results as it was written, whatever the spacing and escapes', () => {
  const bodies = [
    '{"next":null,"results":[{"id":1},{"id":2}]}',
    ' {\n  "next" : "http://x/?c=\\"]}" ,\n  "results" : [ {"id": 1.50, "a": "q\\"}{[,"} ,\n {"id":2,"b":[[],{}],"c":"\\\\"} ]\n} ',
    '{"results":[{"id":1,"s":"\\\\\\""}],"next":{"deep":[1,{"results":[9]}]}}',
    // The last `results` wins, as in JSON.parse.
    '{"results":[{"id":"old"}],"next":null,"results":[{"id":"new"},{"id":"x","u":"\\u00e9\\ud83d\\ude00"}]}',
    // An escaped key is the same key.
    '{"next":null,"\\u0072esults":[{"id":7,"n":-1e+3,"t":true,"f":false,"z":null}]}',
    '{"next":null,"results":[]}',
  ];
  for (const body of bodies) {
    const parsed = JSON.parse(body) as { results: unknown[] };
    const slices = slicesOf(body);
    assert.equal(slices.length, parsed.results.length, body);
    slices.forEach((slice, i) => {
      assert.equal(slice, slice.trim(), `a span holds no spacing around the record: ${slice}`);
      assert.deepEqual(JSON.parse(slice), parsed.results[i], body);
    });
  }
  assert.equal(slicesOf(bodies[1]!)[0], '{"id": 1.50, "a": "q\\"}{[,"}');
});

test('bodies the scan cannot follow keep no texts, and records stay serialized', () => {
  for (const body of ['[{"id":1}]', '{"next":null}', '{"results":{"id":1}}', '{"results":[{"id":1}', '']) {
    const spans = resultSpans(body);
    assert.ok(spans === null || spans.length === 0, `${body}: ${JSON.stringify(spans)}`);
  }
  // Non-objects and records nested past the limit keep no text (rawText decides what lands for them).
  let deep = '{"id":1,"x":';
  for (let i = 0; i < 300; i++) deep += '[';
  for (let i = 0; i < 300; i++) deep += ']';
  deep += '}';
  const body = `{"next":null,"results":[${deep},7,{"id":2}]}`;
  const parsed = JSON.parse(body) as { results: unknown[] };
  keepResultTexts(body, parsed);
  assert.equal(receivedText(parsed.results[0]), undefined);
  assert.equal(receivedText(parsed.results[1]), undefined);
  assert.equal(receivedText(parsed.results[2]), '{"id":2}');
});

let server: TestServer;
const PAGE =
  '{ "next": null,\n  "results": [ {"id": 1, "price": "1.50", "note": "caf\\u00e9"},\n {"id":2} ] }';
before(async () => {
  server = await startServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(PAGE) });
    res.end(PAGE);
  });
});
after(() => server.close());

test("a page read by the client keeps each record's text exactly as the server sent it, once asked", async () => {
  const client = new ApiClient({
    baseUrl: `${server.origin}/api/`,
    token: 'received-text-token',
    rateLimit: 0,
  });
  try {
    const page = await client.listPage(
      'listSubscriptions',
      client.operationUrl('listSubscriptions', {}, {}).href,
    );
    assert.equal(page.results.length, 2);
    // Kept when the page's reader asks (a chain does once its next request is out: pagination.ts).
    assert.equal(receivedText(page.results[0]), undefined);
    page.keepTexts?.();
    assert.equal(receivedText(page.results[0]), '{"id": 1, "price": "1.50", "note": "caf\\u00e9"}');
    assert.equal(receivedText(page.results[1]), '{"id":2}');
  } finally {
    await client.close();
  }
});

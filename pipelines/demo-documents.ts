import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { FormData } from 'undici';
import {
  API_VERSION_2023,
  API_VERSION_2024,
  type Fulfillment,
  FulfillmentOrder as FulfillmentOrderSchema,
  Product,
} from '../schemas/index.js';
import type { ApiClient } from '../src/extract/index.js';
import type { ListOperationId } from '../src/extract/operations.js';
import type { Logger } from '../src/log.js';
import type { LoopbackDocument } from '../src/receive/loopback.js';

/**
 * The demo's "other systems": they call the write operations of the API (both order versions, PATCH,
 * mark-as-paid, fulfillments, fulfillment-order move/close/fulfill, carts, a ticket upload) and capture
 * every response as a document, the way a checkout or an ERP integration would, in the formats
 * `store-sync ingest` reads: NDJSON envelopes, a gzipped file and a single document. The created orders
 * themselves reach the warehouse the way a store sends them: as signed webhooks to `store-sync receive`.
 */

interface Envelope {
  api_version: string;
  data: unknown;
}

/** Deterministic choices, so two demo runs create the same documents. */
function* cycle<T>(items: readonly T[]): Generator<T, never> {
  for (let i = 0; ; i++) yield items[i % items.length]!;
}

const CURRENCIES = ['USD', 'EUR', 'GBP'] as const;
const CARRIERS = ['dhl', 'ups', 'usps', 'royal_mail', 'fedex'] as const;

/** Order placement dates spread over the twelve months before `now`. */
function placedAt(now: Date, index: number, count: number): string {
  const day = 24 * 3600 * 1000;
  const back = Math.floor(((count - index) / count) * 360) * day;
  return new Date(now.getTime() - back - (index % 7) * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

async function allPages<T>(client: ApiClient, id: ListOperationId, parse: (x: unknown) => T): Promise<T[]> {
  const items: T[] = [];
  let link: string | null = client.operationUrl(id).toString();
  while (link) {
    const page = await client.listPage(id, link);
    items.push(...page.results.map(parse));
    link = page.next;
  }
  return items;
}

export interface CapturedDocuments {
  files: string[];
  /** Documents written to the inbox. */
  documents: number;
  orders: number;
  /** The created orders of both versions, which the demo delivers as signed webhooks instead of files. */
  webhooks: LoopbackDocument[];
}

/** Tracking event ids of a fulfillment, which only the sandbox can tell (see docs/sandbox.md). */
export type EventIdSource = (orderNumber: string, fulfillmentId: number) => number[];

export async function captureDemoDocuments(
  client: ApiClient,
  inbox: string,
  now: Date,
  eventIds: EventIdSource,
  logger: Logger,
): Promise<CapturedDocuments> {
  await mkdir(inbox, { recursive: true });
  const products = (await allPages(client, 'listProducts', (x) => Product.parse(x))).filter(
    (p) => (p.variants ?? []).length > 0,
  );
  const productIds = cycle(products.map((p) => p.id));
  const currencies = cycle(CURRENCIES);
  const carriers = cycle(CARRIERS);

  const orders2024: Envelope[] = [];
  const orders2023: unknown[] = [];
  const followUps: Envelope[] = [];
  const shipments: Fulfillment[] = [];
  const orderCount = 120;
  for (let i = 0; i < orderCount; i++) {
    const lines = Array.from({ length: 1 + (i % 3) }, (_, k) => ({
      product_id: productIds.next().value,
      quantity: 1 + ((i + k) % 2),
    }));
    const common = {
      date_placed: placedAt(now, i, orderCount),
      shipping_price: (4.95 + (i % 4)).toFixed(2),
      tags: i % 5 === 0 ? ['demo', 'gift'] : ['demo'],
      user: { email: `customer${i % 40}@example.com`, first_name: 'Demo', last_name: `Customer ${i % 40}` },
    };
    if (i % 3 === 2) {
      const order = await client.call('createOrder2023', { body: { ...common, lines } });
      orders2023.push(order);
      if (i % 6 === 5) {
        followUps.push({
          api_version: API_VERSION_2023,
          data: await client.call('markOrderPaid', { params: { number: order.number }, body: {} }),
        });
      }
    } else {
      const order = await client.call('createOrder', {
        body: { ...common, lines, currency: currencies.next().value },
      });
      orders2024.push({ api_version: API_VERSION_2024, data: order });
      if (i % 4 === 0) {
        const fulfillment = await client.call('createOrderFulfillment', {
          params: { number: order.number },
          body: {
            carrier: carriers.next().value,
            tracking_code: `TRK${1000 + i}`,
            lines: (order.lines ?? []).map((l) => ({ id: l.id })),
          },
        });
        followUps.push({ api_version: API_VERSION_2024, data: fulfillment });
        shipments.push(fulfillment);
      }
      if (i % 10 === 1) {
        const patched = await client.call('updateOrder', {
          params: { number: order.number },
          body: { fulfillment_status: 'on_hold', tags: ['demo', 'vip'] },
        });
        followUps.push({ api_version: API_VERSION_2024, data: patched });
      }
    }
  }

  const fulfillmentOrders: Envelope[] = [];
  const assigned = await allPages(client, 'listAssignedFulfillmentOrders', (x) =>
    FulfillmentOrderSchema.parse(x),
  );
  const processing = assigned.filter((fo) => fo.status === 'processing');
  // Only open, scheduled or on-hold fulfillment orders can be moved or fulfilled.
  const movable = assigned.filter(
    (fo) => fo.status === 'open' || fo.status === 'scheduled' || fo.status === 'on_hold',
  );
  for (const fo of processing.slice(0, 2)) {
    const closed = await client.call('closeFulfillmentOrder', {
      params: { id: fo.id },
      body: { message: 'Closed by the demo' },
    });
    fulfillmentOrders.push({ api_version: API_VERSION_2024, data: closed });
  }
  const locations = await allPages(client, 'listLocations', (x) => x as { id: number });
  for (const fo of movable.slice(0, 2)) {
    const target = locations.find((l) => l.id !== fo.assigned_location?.id);
    if (!target) break;
    const moved = await client.call('moveFulfillmentOrder', {
      params: { id: fo.id },
      body: { new_location_id: target.id },
    });
    fulfillmentOrders.push({ api_version: API_VERSION_2024, data: moved });
  }
  for (const fo of movable.filter((f) => f.status === 'open').slice(2, 4)) {
    const shipment = await client.call('fulfillFulfillmentOrder', {
      params: { id: fo.id },
      body: { notify: false },
    });
    fulfillmentOrders.push({ api_version: API_VERSION_2024, data: shipment });
  }

  // Tracking events of the shipments created above: their ids come from the sandbox (the API cannot list them).
  const events: Envelope[] = [];
  for (const shipment of shipments.slice(0, 5)) {
    for (const eventId of eventIds(shipment.order_number ?? '', shipment.id)) {
      const event = await client.call('getFulfillmentEvent', {
        params: { number: shipment.order_number ?? '', fulfillmentId: shipment.id, eventId },
      });
      events.push({ api_version: API_VERSION_2024, data: event });
    }
  }

  const carts: Envelope[] = [];
  for (let i = 0; i < 8; i++) {
    const cart = await client.call('createCart', {
      body: {
        lines: [{ product_id: productIds.next().value, quantity: 1 }],
        currency: currencies.next().value,
      },
    });
    carts.push({ api_version: API_VERSION_2024, data: cart });
    if (i % 2 === 0) {
      const updated = await client.call('updateCart', {
        params: { id: cart.id },
        body: { lines: [{ product_id: productIds.next().value, quantity: 2 }] },
      });
      carts.push({ api_version: API_VERSION_2024, data: updated });
    }
  }

  const form = new FormData();
  form.append('body', 'Photo of the damaged parcel attached.');
  form.append('files', new Blob([Buffer.from('demo attachment')], { type: 'image/png' }), 'parcel.png');
  const ticket = await client.call('attachTicketFiles', { body: form });

  const ndjson = (items: unknown[]) => `${items.map((x) => JSON.stringify(x)).join('\n')}\n`;
  const files: [string, string | Buffer][] = [
    ['order-updates.ndjson.gz', await promisify(gzip)(ndjson(followUps))],
    ['fulfillment-orders.ndjson', ndjson(fulfillmentOrders)],
    ['fulfillment-events.ndjson', ndjson(events)],
    ['carts.ndjson', ndjson(carts)],
    ['ticket.json', JSON.stringify({ api_version: API_VERSION_2024, data: ticket })],
  ];
  for (const [name, content] of files) await writeFile(path.join(inbox, name), content);
  const documents = followUps.length + fulfillmentOrders.length + events.length + carts.length + 1;
  logger.info('demo.documents', { inbox, documents, files: files.length });
  const webhooks: LoopbackDocument[] = [
    ...orders2024.map((order) => ({ apiVersion: order.api_version, data: order.data })),
    ...orders2023.map((order) => ({ apiVersion: API_VERSION_2023, data: order })),
  ];
  return { files: files.map(([name]) => path.join(inbox, name)), documents, orders: orderCount, webhooks };
}

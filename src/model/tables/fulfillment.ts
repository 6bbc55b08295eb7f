import {
  bool,
  dbl,
  flatten,
  id,
  index,
  int,
  json,
  locationAddressFields,
  money,
  onlyShape,
  reading,
  shippingAddressFields,
  taxLineFields,
  text,
  ts,
} from '../columns.js';
import { API_2023, type TableDef } from '../types.js';

/** Fulfillments (2.5, and the 2023-02-10 ones inside orders), fulfillment events (2.6), fulfillment orders (2.4), locations. */

const fulfillments: TableDef = {
  name: 'fulfillments',
  comment:
    'Shipments, from fulfillment documents and from the fulfillments array of orders of both shapes; ' +
    'the 2023-02-10 ones fill carrier, lines, reference and date_created. Newest by last_event_date wins.',
  key: ['_store', 'id'],
  entity: 'fulfillment',
  // On equal versions the 2024-04-01 fulfillment wins: a 2023-02-10 order carries the same fulfillment as a
  // summary (no line items, location or origin), and arrival would decide which of the two stays.
  unit: { key: 'id', version: 'coalesce(last_event_date, created_at, date_created)', ties: ['api_version'] },
  columns: [
    id('id', 'Fulfillment id.'),
    text('order_number', 'Number of the order.', 'order_number|$$.number'),
    text('api_version', 'Shape the fulfillment came in.', '@api_version'),
    text('status', 'Fulfillment status (open enum).'),
    text('delivery_status', 'Delivery status (open enum, may be null).'),
    ts('created_at', 'When the fulfillment was created (2024-04-01 shape).'),
    ts('last_event_date', 'Date of the last tracking event.'),
    id('location_id', 'Location it shipped from.'),
    bool('requires_shipping', 'Whether it ships.'),
    text('shipping_method', 'Shipping method.'),
    text('tracking_code', 'Tracking code.'),
    text('tracking_link', 'Tracking link.'),
    text('tracking_carrier', 'Carrier (2024-04-01 shape).'),
    text('tracking_carriers', 'Carriers (2024-04-01 shape).'),
    text('tracking_codes', 'Tracking codes (2024-04-01 shape).'),
    text('tracking_links', 'Tracking links (2024-04-01 shape).'),
    ...onlyShape(API_2023, [
      text('carrier', 'Carrier (2023-02-10 shape).'),
      ts('date_created', 'When the fulfillment was created (2023-02-10 shape).'),
      text('lines', 'Lines of the shipment as the 2023-02-10 shape gives them (text).'),
      text('reference', 'Reference (2023-02-10 shape).'),
    ]),
    ...flatten('origin_', 'origin_address', 'Origin address', locationAddressFields()),
  ],
};

const fulfillmentLineItems: TableDef = {
  name: 'fulfillment_line_items',
  comment: 'Line items of fulfillments.',
  key: ['_store', 'fulfillment_id', 'id'],
  entity: 'fulfillment',
  parent: 'fulfillments',
  owner: { table: 'fulfillments', column: 'fulfillment_id' },
  columns: [
    id('fulfillment_id', 'Fulfillment id.', '^.id'),
    id('id', 'Fulfillment line item id.'),
    text('order_number', 'Number of the order.', '^.order_number|$$.number'),
    id('order_line_id', 'Order line shipped.'),
    id('product_id', 'Product id.'),
    text('product_title', 'Product title.'),
    text('product_image', 'Product image URL.'),
    text('sku', 'Stock keeping unit.'),
    int('quantity', 'Units of the order line shipped in this fulfillment.'),
    money(
      'fulfilled_quantity',
      reading('Units fulfilled, equal to quantity in the sandbox (decimal text in the API).'),
    ),
    money(
      'returnable_quantity',
      reading(
        "Units that can still be returned: quantity minus the order line's refunded units (decimal text).",
      ),
    ),
    money(
      'returned_quantity',
      reading("Units returned: the order line's refunded units, up to quantity (decimal text)."),
    ),
    text('fulfillment_service', 'Fulfillment service.'),
    bool('requires_shipping', 'Whether it ships.'),
    text('currency', 'Currency.'),
    money(
      'price_excl_tax',
      reading(
        "Total of the shipped units excluding tax, after discounts: their share (quantity ÷ the line's quantity) of the order line's price_excl_tax. Not a unit price.",
      ),
    ),
    money(
      'price_incl_tax',
      reading(
        'Total of the shipped units including tax, after discounts: price_excl_tax plus its tax lines. Not a unit price.',
      ),
    ),
    money('total_discount', reading("The shipped units' share of the order line's discount, excluding tax.")),
  ],
};

const fulfillmentLineItemTaxLines: TableDef = {
  name: 'fulfillment_line_item_tax_lines',
  comment: 'Tax lines of fulfillment line items.',
  key: ['_store', 'fulfillment_id', 'line_item_id', 'index'],
  entity: 'fulfillment',
  parent: 'fulfillment_line_items',
  owner: { table: 'fulfillments', column: 'fulfillment_id' },
  columns: [
    id('fulfillment_id', 'Fulfillment id.', '$.id'),
    text('order_number', 'Number of the order.', '$.order_number|$$.number'),
    id('line_item_id', 'Fulfillment line item id.', '^.id'),
    index(),
    ...taxLineFields("This tax on the item's price_excl_tax (the shipped units, after discounts)."),
  ],
};

const fulfillmentEvents: TableDef = {
  name: 'fulfillment_events',
  comment: 'Tracking events of fulfillments (spec 2.6); the newest by updated_at wins.',
  key: ['_store', 'id'],
  entity: 'fulfillment_event',
  unit: { key: 'id', version: 'updated_at' },
  columns: [
    id('id', 'Event id.'),
    id('fulfillment_id', 'Fulfillment id (spec field `fulfillment`).', 'fulfillment'),
    text('order_number', 'Order number (spec field `order`).', 'order'),
    text('status', 'Event status (open enum).'),
    text('message', 'Event message.'),
    ts('happened_at', 'When the event happened.'),
    ts('estimated_delivery_at', 'Estimated delivery.'),
    ts('created_at', 'When the event was recorded.'),
    ts('updated_at', 'When the event last changed.'),
    text('line1', 'Address line 1 where it happened.'),
    text('line2', 'Address line 2.'),
    text('city', 'City.'),
    text('postcode', 'Postcode.'),
    text('state', 'State or region.'),
    text('country', 'Country.'),
    dbl('latitude', 'Latitude.'),
    dbl('longitude', 'Longitude.'),
  ],
};

const fulfillmentOrders: TableDef = {
  name: 'fulfillment_orders',
  comment:
    'Fulfillment orders (spec 2.4), from the fulfillment-order streams and documents (move results hold two). ' +
    'The newest by updated_at wins; the spec shows no timestamps, so a document without updated_at ranks ' +
    'below one with it, and between two without, the last one received wins.',
  key: ['_store', 'id'],
  entity: 'fulfillment_order',
  // Spec 2.4 lists no times, but servers send created_at/updated_at: where they do, a late-arriving older
  // document must not replace a newer one (compareVersions, src/load/merge.ts, ranks a missing version lowest).
  unit: { key: 'id', version: 'updated_at' },
  columns: [
    id('id', 'Fulfillment order id.'),
    text('order_number', 'Number of the order.'),
    ts('created_at', 'When the fulfillment order was created, when the server sends it (not in spec 2.4).'),
    ts(
      'updated_at',
      'When the fulfillment order last changed, when the server sends it (not in spec 2.4); decides which document is newest.',
    ),
    text('status', 'Status (open enum).'),
    text('request_status', 'Request status (open enum).'),
    json('supported_actions', 'Actions the fulfillment order supports (item type not given by the spec).'),
    ...flatten('shipping_method_', 'shipping_method', 'Shipping method', [
      text('code', 'Code.'),
      text('name', 'Name.'),
    ]),
    ...flatten('assigned_location_', 'assigned_location', 'Assigned location', [
      id('id', 'Location id.'),
      text('name', 'Name.'),
      bool('accept_return', 'Whether it accepts returns.'),
      text('callback_url', 'Callback URL.'),
      ...flatten('', 'address', 'Address', locationAddressFields()),
    ]),
    ...flatten('shipping_', 'shipping_address', 'Shipping address', shippingAddressFields()),
  ],
};

const foOwner = { table: 'fulfillment_orders', column: 'fulfillment_order_id' };
const foId = () => id('fulfillment_order_id', 'Fulfillment order id.', '$.id');

const fulfillmentOrderLineItems: TableDef = {
  name: 'fulfillment_order_line_items',
  comment: 'Line items of fulfillment orders.',
  key: ['_store', 'fulfillment_order_id', 'id'],
  entity: 'fulfillment_order',
  parent: 'fulfillment_orders',
  owner: foOwner,
  columns: [
    foId(),
    id('id', 'Line item id.'),
    id('order_line_id', 'Order line id.'),
    text('product_id', 'Product id (a string in this object).'),
    text('product_title', 'Product title.'),
    text('product_image', 'Product image URL.'),
    text('sku', 'Stock keeping unit.'),
    id('stockrecord_id', 'Stockrecord id.'),
    int('quantity', 'Units of the order line this fulfillment order covers.'),
    money(
      'fulfillable_quantity',
      reading(
        'Units still to fulfil: quantity while open, 0 once closed or cancelled (decimal text in the API).',
      ),
    ),
    text('currency', 'Currency.'),
    money(
      'price_excl_tax',
      reading(
        "Total of the item's units excluding tax, after discounts: their share (quantity ÷ the line's quantity) of the order line's price_excl_tax. Not a unit price.",
      ),
    ),
    money(
      'price_incl_tax',
      reading(
        "Total of the item's units including tax, after discounts: price_excl_tax plus its tax lines. Not a unit price.",
      ),
    ),
    money('total_discount', reading("The item's units' share of the order line's discount, excluding tax.")),
  ],
};

const fulfillmentOrderLineItemTaxLines: TableDef = {
  name: 'fulfillment_order_line_item_tax_lines',
  comment: 'Tax lines of fulfillment order line items.',
  key: ['_store', 'fulfillment_order_id', 'line_item_id', 'index'],
  entity: 'fulfillment_order',
  parent: 'fulfillment_order_line_items',
  owner: foOwner,
  columns: [
    foId(),
    id('line_item_id', 'Line item id.', '^.id'),
    index(),
    ...taxLineFields("This tax on the item's price_excl_tax (its units, after discounts)."),
  ],
};

const fulfillmentOrderHolds: TableDef = {
  name: 'fulfillment_order_holds',
  comment: 'Holds placed on fulfillment orders.',
  key: ['_store', 'fulfillment_order_id', 'index'],
  entity: 'fulfillment_order',
  parent: 'fulfillment_orders',
  owner: foOwner,
  columns: [
    foId(),
    index(),
    text('reason', 'Hold reason (open enum).'),
    text('reason_message', 'Hold message.'),
    ts('created_at', 'When the hold was placed.'),
  ],
};

const fulfillmentOrderMerchantRequests: TableDef = {
  name: 'fulfillment_order_merchant_requests',
  comment: 'Requests the merchant sent about fulfillment orders.',
  key: ['_store', 'fulfillment_order_id', 'index'],
  entity: 'fulfillment_order',
  parent: 'fulfillment_orders',
  owner: foOwner,
  columns: [
    foId(),
    index(),
    text('type', 'Request type (open enum).'),
    text('message', 'Message.'),
    bool('notify', 'Whether the customer was notified.'),
  ],
};

const locations: TableDef = {
  name: 'locations',
  comment: 'Fulfillment locations, from full scans of GET /locations/.',
  key: ['_store', 'id'],
  entity: 'location',
  unit: { key: 'id' },
  fullScan: true,
  columns: [
    id('id', 'Location id.'),
    text('name', 'Name.'),
    bool('accept_return', 'Whether it accepts returns.'),
    text('callback_url', 'Callback URL.'),
    ...flatten('address_', 'address', 'Address', locationAddressFields()),
  ],
};

export const fulfillmentTables: TableDef[] = [
  fulfillments,
  fulfillmentLineItems,
  fulfillmentLineItemTaxLines,
  fulfillmentEvents,
  fulfillmentOrders,
  fulfillmentOrderLineItems,
  fulfillmentOrderLineItemTaxLines,
  fulfillmentOrderHolds,
  fulfillmentOrderMerchantRequests,
  locations,
];

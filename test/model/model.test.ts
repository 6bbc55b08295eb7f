import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as z from 'zod';
import type { EntityKind } from '../../src/contracts.js';
import { API_2024, type PlanNode, plans, type TableDef, tableDefinitions } from '../../src/model/index.js';
import { planResources } from '../../src/model/resources.js';
import { elementsOf, pathOf } from '../../src/model/schema-paths.js';
import { type Model, validateModel } from '../../src/model/validate.js';

/** A copy of the real model, changed by `edit`: plans and tables are plain data, the schemas are shared. */
function doctored(edit: (plans: Record<EntityKind, PlanNode>, tables: TableDef[]) => void): Model {
  const copy = { plans: structuredClone(plans), tables: structuredClone([...tableDefinitions]) };
  edit(copy.plans, copy.tables);
  return { ...copy, resources: planResources };
}

const nodeOf = (root: PlanNode, table: string): PlanNode => {
  const found = [root, ...(root.children ?? []).map((c) => nodeOf(c, table))].find((n) => n?.table === table);
  return found as PlanNode;
};
const tableOf = (tables: TableDef[], name: string) => tables.find((t) => t.name === name)!;

/** The problems a doctored model has that the real one has not. */
const newProblems = (model: Model) => validateModel(model);

describe('the table model', () => {
  it('has no problems: plan paths exist in the resource schemas, trees agree', () => {
    assert.deepEqual(validateModel(), []);
  });

  it('a sighted unit that owns tables, keeps a history or is fed by full scans fails (held-units.ts)', () => {
    const model = doctored((_, tables) => {
      tableOf(tables, 'products').unit!.sighted = true;
    });
    const problems = newProblems(model);
    assert.deepEqual(
      problems.map((p) => p.replace(/\(it owns .*\)/, '(it owns …)')),
      [
        'products: a sighted unit cannot own tables (it owns …)',
        'products: a sighted unit cannot keep a history',
        'products: a sighted unit cannot be fed by full scans',
      ],
    );
  });

  it('a dotted plan field fails, naming the field and the table (the normalizer reads one key)', () => {
    const model = doctored((p) => {
      nodeOf(p.product, 'product_categories').field = 'product.categories';
    });
    const problems = newProblems(model);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(
      problems[0]!,
      /^product_categories: plan field `product\.categories` \(under products\) is a dotted path.*write no rows/,
    );
  });

  it('a plan field the resource does not have fails, naming the field, the table and the schema', () => {
    const model = doctored((p) => {
      nodeOf(p.product, 'product_categories').field = 'categoriez';
    });
    assert.deepEqual(newProblems(model), [
      'product_categories: plan field `categoriez` is not an array field of the products items in Product, ' +
        'so it would write no rows',
    ]);
  });

  it('a plan field that is an object, not an array, fails', () => {
    const model = doctored((p) => {
      p.order.children!.push({ table: 'order_subscriptions', field: 'billing_address' });
    });
    const problems = newProblems(model);
    assert.ok(
      problems.some((m) => m.includes('`billing_address` is not an array field of the orders items')),
      problems.join('\n'),
    );
  });

  it('a column source naming no field fails; a shape-specific source is checked in its shape only', () => {
    const model = doctored((_, tables) => {
      tableOf(tables, 'products').columns.find((c) => c.name === 'title')!.source = 'titel';
      // 2024-04-01 lines carry product_id, not an embedded product.
      tableOf(tables, 'order_lines').columns.find((c) => c.name === 'product_title')!.source = {
        [API_2024]: 'product.title',
      };
    });
    assert.deepEqual(newProblems(model).sort(), [
      'order_lines.product_title: source `product.title` names no field of the order_lines item in Order2024',
      'products.title: source `titel` names no field of the products item in Product',
    ]);
  });

  it('a table no plan fills fails, unless the model declares it bookkeeping', () => {
    const model = doctored((p) => {
      p.product.children = p.product.children!.filter((c) => c.table !== 'product_images');
    });
    assert.deepEqual(newProblems(model), [
      "product_images: no plan fills it (a table the loader fills is declared entity 'bookkeeping')",
    ]);
    const declared = doctored((p, tables) => {
      p.product.children = p.product.children!.filter((c) => c.table !== 'product_images');
      tableOf(tables, 'product_images').entity = 'bookkeeping';
    });
    assert.deepEqual(newProblems(declared), []);
  });

  it('TableDef.parent, owner and unit must agree with the plan tree', () => {
    const model = doctored((_, tables) => {
      tableOf(tables, 'variant_prices').parent = 'products';
      tableOf(tables, 'order_refund_lines').owner = { table: 'fulfillments', column: 'order_number' };
      delete tableOf(tables, 'tickets').unit;
    });
    const problems = newProblems(model).join('\n');
    assert.match(problems, /variant_prices \(plan product, under variants\): TableDef.parent is products/);
    assert.match(
      problems,
      /order_refund_lines .*TableDef.owner is fulfillments, but the unit above it is orders/,
    );
    assert.match(
      problems,
      /tickets \(plan ticket\): the plan makes it a unit but its TableDef.unit disagrees/,
    );
  });

  it("an owned table's owner column must read its unit's key", () => {
    const model = doctored((_, tables) => {
      tableOf(tables, 'cart_lines').columns.find((c) => c.name === 'cart_id')!.source = 'id';
    });
    assert.deepEqual(newProblems(model), [
      "cart_lines (plan cart, under carts): owner column cart_id must read the unit's key ($.id or ^.id)",
    ]);
  });
});

describe('positional ids', () => {
  const sourceOf = (table: string, column: string) =>
    tableDefinitions.find((t) => t.name === table)!.columns.find((c) => c.name === column)!.source;

  it('every owned item id falls back to its position, and every column holding a parent item id too', () => {
    for (const def of tableDefinitions) {
      if (!def.owner) continue;
      for (const key of def.key) {
        const source = sourceOf(def.name, key);
        if (key === def.owner.column) assert.doesNotMatch(String(source), /#-/, `${def.name}.${key}`);
        else if (key === 'id') assert.equal(source, 'id|#-', `${def.name}.${key}`);
        else if (String(source).startsWith('^.')) assert.equal(source, '^.id|^#-', `${def.name}.${key}`);
      }
    }
    assert.equal(sourceOf('order_lines', 'id'), 'id|#-');
    assert.equal(sourceOf('order_line_tax_lines', 'line_id'), '^.id|^#-');
    assert.equal(sourceOf('ticket_attachments', 'comment_id'), '^.id|^#-');
    // Unit keys and owner columns are never positions.
    assert.equal(sourceOf('orders', 'number'), 'number');
    assert.equal(sourceOf('fulfillments', 'id'), 'id');
    assert.equal(sourceOf('fulfillment_line_items', 'fulfillment_id'), '^.id');
    assert.equal(sourceOf('variants', 'product_id'), '^.id');
  });

  it('a position as a unit key, under a unit, or before another alternative fails', () => {
    const model = doctored((_, tables) => {
      tableOf(tables, 'orders').columns.find((c) => c.name === 'number')!.source = 'number|#-';
      tableOf(tables, 'variant_prices').columns.find((c) => c.name === 'variant_id')!.source = '^#-|^.id';
      tableOf(tables, 'product_images').columns.find((c) => c.name === 'display_order')!.source = '^#-';
    });
    assert.deepEqual(newProblems(model), [
      "orders (plan order): number reads `#-`, but a unit's key is never a position",
      'product_images (plan product, under products): display_order reads `^#-`, but its parent is a unit, whose ' +
        'key is never a position',
      'variant_prices (plan product, under variants): variant_id reads `^#-`, which always fills it, before ' +
        'other alternatives',
    ]);
  });
});

describe('schema paths', () => {
  const Inner = z.looseObject({ code: z.string().nullish() });
  const schema = z.looseObject({
    a: z.union([z.looseObject({ x: z.int() }), z.looseObject({ y: Inner })]).nullish(),
    list: z.array(Inner).optional(),
    free: z.record(z.string(), z.unknown()),
    lazy: z.lazy(() => Inner),
  });

  it('resolves through wrappers, every branch of a union, records and lazy schemas', () => {
    for (const path of ['a.x', 'a.y.code', 'free.anything.below', 'lazy.code'])
      assert.ok(pathOf([schema], path).length > 0, path);
    for (const path of ['a.z', 'a.x.deeper', 'list.code', 'missing'])
      assert.equal(pathOf([schema], path).length, 0, path);
  });

  it('finds the elements of an array field, and none of a non-array', () => {
    assert.equal(elementsOf(pathOf([schema], 'list')).length, 1);
    assert.equal(elementsOf(pathOf([schema], 'lazy')).length, 0);
  });
});

import type { Ticket } from '../../../schemas/index.js';
import { AGENTS } from './attribution.js';
import type { Customer } from './customers.js';
import { rngFor } from './random.js';
import type { IdCounter } from './scale.js';
import { orderNumberOf } from './seed-subscriptions.js';
import { DAY_MS, HISTORY_MS, iso, wholeSeconds } from './time.js';
import { SandboxRuleError, type UploadedFile } from './types.js';
import { CDN_ORIGIN, SUPPORT_SUBJECTS } from './vocab.js';

export interface TicketContext {
  seed: number;
  anchorMs: number;
  customers: readonly Customer[];
  productCount: number;
  /** First one-off order index and how many there are, for tickets about an order. */
  firstOneOff: number;
  oneOffOrders: number;
}

/** Seeded tickets, ids 1..count in creation order; comment and attachment ids count up across tickets. */
export function seedTickets(
  ctx: TicketContext,
  count: number,
  commentIds: IdCounter,
  attachmentIds: IdCounter,
): Ticket[] {
  const rng = rngFor(ctx.seed, 'tickets');
  const out: Ticket[] = [];
  for (let i = 0; i < count; i++) {
    const customer = rng.pick(ctx.customers);
    const agent = rng.pick(AGENTS);
    const createdMs = wholeSeconds(ctx.anchorMs - HISTORY_MS + ((i + rng.next()) / count) * HISTORY_MS);
    const age = ctx.anchorMs - createdMs;
    const status =
      age > 20 * DAY_MS
        ? rng.pick(['solved', 'closed', 'closed'])
        : rng.pick(['new', 'open', 'pending', 'solved']);
    const comments: NonNullable<Ticket['comments']> = [];
    const replies = status === 'new' ? 1 : rng.int(2, 4);
    let at = createdMs;
    for (let c = 0; c < replies; c++) {
      const fromCustomer = c % 2 === 0;
      const internal = !fromCustomer && rng.chance(0.15);
      const attach = fromCustomer && rng.chance(0.25);
      comments.push({
        attachments: attach
          ? [
              {
                file: `${CDN_ORIGIN}/tickets/${i + 1}/photo-${c + 1}.jpg`,
                file_name: `photo-${c + 1}.jpg`,
                id: attachmentIds.next(),
              },
            ]
          : [],
        author: fromCustomer ? customer.user.id : agent.id,
        body: fromCustomer
          ? 'Hello, could you help me with this?'
          : internal
            ? 'Checked the carrier portal.'
            : 'Thanks, we are on it.',
        created_at: iso(at),
        from_email: fromCustomer ? customer.user.email : agent.email,
        id: commentIds.next(),
        is_public: !internal,
      });
      at = Math.min(ctx.anchorMs - 60_000, at + rng.int(1, 48) * 3_600_000);
    }
    const aboutOrder = rng.chance(0.6);
    out.push({
      assignee: status === 'new' ? null : agent.id,
      channel: rng.pick(['email', 'email', 'chat', 'phone', 'web', 'social']),
      comments,
      created_at: iso(createdMs),
      from_email: customer.user.email,
      id: i + 1,
      order: aboutOrder ? orderNumberOf(ctx.firstOneOff + rng.int(0, ctx.oneOffOrders - 1)) : '',
      priority: rng.pick(['low', 'normal', 'normal', 'high', 'urgent']),
      products: rng.chance(0.4) ? [rng.int(1, ctx.productCount)] : [],
      requester: customer.user.id,
      status,
      subject: rng.pick(SUPPORT_SUBJECTS),
      tags: rng.chance(0.5) ? [rng.pick(['shipping', 'billing', 'subscription', 'product'])] : [],
      ticket_type: rng.int(1, 4),
      updated_at: comments[comments.length - 1]!.created_at,
    });
  }
  return out;
}

/**
 * POST /tickets/attachments/: the spec names only `files`, so the ticket is chosen by an optional
 * `ticket_id` form field and defaults to the newest ticket. Optional `body`, `author_id`, `from_email`
 * and `is_public` fields shape the comment that carries the files.
 */
export function attachFiles(
  tickets: Ticket[],
  fields: Record<string, string>,
  files: UploadedFile[],
  ids: { comment: IdCounter; attachment: IdCounter },
  nowMs: number,
): Ticket {
  let at = tickets.length - 1;
  if (fields.ticket_id !== undefined) {
    if (!/^\d+$/.test(fields.ticket_id)) {
      throw new SandboxRuleError(400, 'invalid', 'ticket_id must be a whole number', 'ticket_id');
    }
    const id = Number(fields.ticket_id);
    at = tickets.findIndex((t) => t.id === id);
    if (at < 0) throw new SandboxRuleError(404, 'not_found', `ticket ${id} does not exist`);
  }
  const ticket = tickets[at];
  if (!ticket) throw new SandboxRuleError(404, 'not_found', 'the store has no ticket to attach files to');
  if (fields.author_id !== undefined && !/^\d+$/.test(fields.author_id)) {
    throw new SandboxRuleError(400, 'invalid', 'author_id must be a whole number', 'author_id');
  }
  if (files.length === 0) return ticket;
  const attachments = files.map((file) => {
    const id = ids.attachment.next();
    return {
      file: `${CDN_ORIGIN}/tickets/${ticket.id}/${id}/${encodeURIComponent(file.fileName)}`,
      file_name: file.fileName,
      id,
    };
  });
  const comment = {
    attachments,
    author: fields.author_id !== undefined ? Number(fields.author_id) : (ticket.requester ?? null),
    body: fields.body ?? `Attached ${files.length} file${files.length === 1 ? '' : 's'}`,
    created_at: iso(nowMs),
    from_email: fields.from_email ?? ticket.from_email ?? null,
    id: ids.comment.next(),
    is_public: fields.is_public !== 'false',
  };
  const next: Ticket = {
    ...ticket,
    comments: [...(ticket.comments ?? []), comment],
    status: ticket.status === 'new' ? 'open' : ticket.status,
    updated_at: iso(nowMs),
  };
  tickets[at] = next;
  return next;
}

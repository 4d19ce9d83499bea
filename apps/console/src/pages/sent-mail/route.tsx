/** @jsxImportSource hono/jsx */
import { listCaughtMail } from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { countPending } from '../../sessions.ts';
import { SentMailPage } from './page.tsx';

/** `GET /mail`: the e-mails the local mail catcher received. */
export function mountMail(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  app.get('/mail', async (c) => {
    const limit = 50;
    const [mails, pending] = await Promise.all([listCaughtMail(ctx.sql, limit), countPending(ctx.sql)]);
    return page(c, <SentMailPage approver={c.var.approver} pending={pending} mails={mails} limit={limit} />);
  });
}

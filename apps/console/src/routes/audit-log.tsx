/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { Layout, page } from '../pages.tsx';

/** Audit log (operators only). */
export function mountAuditLog(app: Hono<ConsoleEnv>, _ctx: ConsoleContext) {
  app.get('/operator/audit', (c) =>
    page(
      c,
      <Layout title="Audit log" approver={c.get('approver')} current="audit">
        <h1>Audit log</h1>
      </Layout>,
    ),
  );
}

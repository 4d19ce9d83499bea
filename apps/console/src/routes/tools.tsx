/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { Layout, page } from '../pages.tsx';

/** Tools (operators only). */
export function mountTools(app: Hono<ConsoleEnv>, _ctx: ConsoleContext) {
  app.get('/operator/tools', (c) =>
    page(
      c,
      <Layout title="Tools" approver={c.get('approver')} current="tools">
        <h1>Tools</h1>
      </Layout>,
    ),
  );
}

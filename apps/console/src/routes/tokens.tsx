/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { Layout, page } from '../pages.tsx';

/** Tokens and grants (operators only). */
export function mountTokens(app: Hono<ConsoleEnv>, _ctx: ConsoleContext) {
  app.get('/operator/tokens', (c) =>
    page(
      c,
      <Layout title="Tokens and grants" approver={c.get('approver')} current="tokens">
        <h1>Tokens and grants</h1>
      </Layout>,
    ),
  );
}

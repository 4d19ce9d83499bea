/** @jsxImportSource hono/jsx */
import type { ConsoleRequest } from '../context.ts';
import { page } from '../layout/layout.tsx';
import { MessagePage } from '../layout/message-page.tsx';

/** A person or server named in the path: trimmed, at most 200 characters; undefined otherwise. */
export function pathName(c: ConsoleRequest, name: string): string | undefined {
  const v = c.req.param(name)?.trim();
  return v && v.length <= 200 ? v : undefined;
}

/** Answers 404 for a path that names no person or server. */
export function notFound(c: ConsoleRequest, what: 'person' | 'server') {
  return page(
    c,
    <MessagePage title="Not found" message={`That is not a ${what}.`} approver={c.var.approver} />,
    404,
  );
}

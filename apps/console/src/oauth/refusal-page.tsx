/** @jsxImportSource hono/jsx */
import type { Context } from 'hono';
import { page } from '../layout/layout.tsx';
import { MessagePage } from '../layout/message-page.tsx';
import type { Approver } from '../sessions.ts';

/** A refusal shown to the person in the browser: nothing is sent to a redirect URI that is not the client's. */
export function refusalPage(c: Context, title: string, message: string, status: number, approver?: Approver) {
  return page(c, <MessagePage title={title} message={message} approver={approver} />, status);
}

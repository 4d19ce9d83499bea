import type { Hono } from 'hono';
import { deleteCookie, getCookie } from 'hono/cookie';
import type { ConsoleContext, ConsoleEnv } from '../../context.ts';
import { deleteSession } from '../../sessions.ts';

/** `POST /logout`: ends the session and forgets its cookie. */
export function mountSignOut(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  app.post('/logout', async (c) => {
    const sid = getCookie(c, ctx.cookies.session);
    if (sid) await deleteSession(ctx.sql, sid);
    deleteCookie(c, ctx.cookies.session, { path: '/', secure: ctx.cookies.attributes.secure });
    return c.redirect('/login', 303);
  });
}

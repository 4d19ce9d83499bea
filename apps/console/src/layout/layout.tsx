/** @jsxImportSource hono/jsx */
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { Child } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import type { Approver } from '../sessions.ts';
import { Shown } from '../visible-text.tsx';
import { CSS } from './styles.ts';

/** Answers with `element` as a whole HTML document. */
export function page(c: Context, element: JSX.Element, status = 200) {
  return c.html(html`<!doctype html>${element}`, status as 200);
}

/** The operators' pages, in the navigation of an operator only. */
const OPERATOR_PAGES = [
  ['tokens', '/operator/tokens', 'Tokens'],
  ['audit', '/operator/audit', 'Audit log'],
  ['charts', '/operator/charts', 'Charts'],
  ['tools', '/operator/tools', 'Tools'],
  ['groups', '/operator/groups', 'Groups'],
] as const;

/** The page frame: skip link, header with navigation and sign-out, one main landmark. */
export function Layout(props: {
  title: string;
  approver?: Approver | undefined;
  /** How many requests wait, for the navigation; a page that did not count them shows no number. */
  pending?: number | undefined;
  current?:
    | 'pending'
    | 'history'
    | 'mail'
    | 'my-tokens'
    | 'tokens'
    | 'audit'
    | 'charts'
    | 'tools'
    | 'groups'
    | undefined;
  children?: Child;
}) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} — Bulkhead approvals`}</title>
        <style dangerouslySetInnerHTML={{ __html: CSS }} />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header>
          <div class="bar">
            <a class="brand" href="/">
              Bulkhead approvals
            </a>
            {props.approver && (
              <nav aria-label="Main">
                <ul>
                  <li>
                    <a href="/" aria-current={props.current === 'pending' ? 'page' : undefined}>
                      {props.pending === undefined ? 'Pending' : `Pending (${props.pending})`}
                    </a>
                  </li>
                  <li>
                    <a href="/history" aria-current={props.current === 'history' ? 'page' : undefined}>
                      History
                    </a>
                  </li>
                  <li>
                    <a href="/mail" aria-current={props.current === 'mail' ? 'page' : undefined}>
                      Sent mail
                    </a>
                  </li>
                  {props.approver.personId && (
                    <li>
                      <a href="/my-tokens" aria-current={props.current === 'my-tokens' ? 'page' : undefined}>
                        My tokens
                      </a>
                    </li>
                  )}
                  {props.approver.operator &&
                    OPERATOR_PAGES.map(([key, href, name]) => (
                      <li>
                        <a href={href} aria-current={props.current === key ? 'page' : undefined}>
                          {name}
                        </a>
                      </li>
                    ))}
                </ul>
              </nav>
            )}
            {props.approver && (
              <div class="who">
                <span>
                  Signed in as <Shown text={props.approver.label} />
                </span>
                {props.approver.csrf && (
                  <form method="post" action="/logout">
                    <input type="hidden" name="_csrf" value={props.approver.csrf} />
                    <button class="secondary" type="submit">
                      Sign out
                    </button>
                  </form>
                )}
              </div>
            )}
          </div>
        </header>
        <main id="main">{props.children}</main>
      </body>
    </html>
  );
}

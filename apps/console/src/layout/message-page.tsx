/** @jsxImportSource hono/jsx */
import type { Approver } from '../sessions.ts';
import { Shown } from '../visible-text.tsx';
import { Layout } from './layout.tsx';

/** A short page for refusals and missing things. */
export function MessagePage(props: { title: string; message: string; approver?: Approver | undefined }) {
  return (
    <Layout title={props.title} approver={props.approver}>
      <h1>{props.title}</h1>
      <p>
        <Shown text={props.message} />
      </p>
      <p>
        <a href={props.approver ? '/' : '/login'}>
          {props.approver ? 'Back to the pending requests' : 'Sign in'}
        </a>
      </p>
    </Layout>
  );
}

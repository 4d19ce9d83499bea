/** @jsxImportSource hono/jsx */
import type { GroupRights } from '@bulkhead/core/operator';
import { Layout } from '../../layout/layout.tsx';
import { when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';

/** A group's rights in words. */
function rights(g: GroupRights): string {
  return [
    ...(g.approve.length ? [`approve ${g.approve.join(', ')}`] : []),
    ...(g.operate ? ['operate'] : []),
    ...(g.tokens.length ? [`tokens for ${g.tokens.join(', ')}`] : []),
  ].join('; ');
}

/** The mapped groups, each with a button that takes its rights away. */
function GroupTable({ groups, csrf }: { groups: GroupRights[]; csrf: string }) {
  return (
    <section class="card" aria-labelledby="groups-heading">
      <h2 id="groups-heading">Groups with rights</h2>
      {groups.length === 0 ? (
        <p>No group has rights: everyone who signs in with a company account is refused.</p>
      ) : (
        <table class="stack">
          <caption>Every mapped group, by name.</caption>
          <thead>
            <tr>
              <th scope="col">Group</th>
              <th scope="col">Rights</th>
              <th scope="col">Changed</th>
              <th scope="col">
                <span class="visually-hidden">Remove</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {groups.map((g) => (
              <tr>
                <td data-label="Group">
                  <code>
                    <Shown text={g.group} />
                  </code>
                </td>
                <td data-label="Rights">{rights(g)}</td>
                <td data-label="Changed">
                  {when(g.updatedAt)} by <Shown text={g.updatedBy} />
                </td>
                <td>
                  <form method="post" action="/operator/groups/remove">
                    <input type="hidden" name="_csrf" value={csrf} />
                    <input type="hidden" name="group" value={g.group} />
                    <button class="secondary" type="submit" aria-label={`Remove the rights of ${g.group}`}>
                      Remove
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** The operators' page of the identity provider's groups and the rights each gives (`bulkhead groups`). */
export function GroupsPage(props: {
  approver: Approver;
  groups: GroupRights[];
  servers: readonly string[];
  notice?: string | undefined;
  error?: string | undefined;
}) {
  const csrf = props.approver.csrf ?? '';
  return (
    <Layout title="Groups" approver={props.approver} current="groups">
      <h1>Groups</h1>
      <p>
        People who sign in with their company account have the rights of their groups at the identity
        provider, read again at every sign-in and every decision.
      </p>
      {props.notice && (
        <div class="notice" role="status">
          {props.notice}
        </div>
      )}
      {props.error && (
        <div class="error" role="alert" id="group-error">
          {props.error}
        </div>
      )}
      <GroupTable groups={props.groups} csrf={csrf} />
      <section class="card narrow" aria-labelledby="add-heading">
        <h2 id="add-heading">Give a group rights</h2>
        <form method="post" action="/operator/groups">
          <input type="hidden" name="_csrf" value={csrf} />
          <label for="group">Group</label>
          <p class="hint" id="group-hint">
            As the ID token's groups claim names it (Entra ID: the group's object id). A group already here
            gets exactly these rights.
          </p>
          <input id="group" name="group" required maxlength={256} aria-describedby="group-hint" />
          <label for="approve" class="later">
            Approve requests of (servers, separated by spaces)
          </label>
          <input id="approve" name="approve" placeholder={props.servers.join(' ')} />
          <label for="tokens" class="later">
            Hold tokens for (server or server:scope, separated by spaces)
          </label>
          <input id="tokens" name="tokens" />
          <p>
            <input type="checkbox" id="operate" name="operate" value="on" />{' '}
            <label for="operate">Operate</label>
          </p>
          <div class="actions">
            <button class="primary" type="submit">
              Save the group's rights
            </button>
          </div>
        </form>
      </section>
    </Layout>
  );
}

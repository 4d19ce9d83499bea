import { existsSync, readFileSync, writeFileSync } from 'node:fs';

// The Alertmanager 0.25 API as Swagger 2.0, a real document for `bulkhead new server --from-openapi`:
// the Go source that embeds it comes with the Debian package golang-github-prometheus-alertmanager-dev.

/** The Go file whose `SwaggerJSON` literal is the document. */
export const ALERTMANAGER_SPEC_SOURCE =
  '/usr/share/gocode/src/github.com/prometheus/alertmanager/api/v2/restapi/embedded_spec.go';

/**
 * Writes the `SwaggerJSON` literal of {@link ALERTMANAGER_SPEC_SOURCE} (not the flattened one after it)
 * to `target` as JSON, checked to parse, and returns `target`.
 */
export function extractAlertmanagerSpec(target: string, source = ALERTMANAGER_SPEC_SOURCE): string {
  if (!existsSync(source))
    throw new Error(
      `${source} is missing: install the Debian package golang-github-prometheus-alertmanager-dev (apt-get install golang-github-prometheus-alertmanager-dev)`,
    );
  const match = /\bSwaggerJSON = json\.RawMessage\(\[\]byte\(`([\s\S]*?)`\)\)/.exec(
    readFileSync(source, 'utf8'),
  );
  if (!match) throw new Error(`${source}: no SwaggerJSON = json.RawMessage([]byte(\`...\`)) literal in it`);
  const doc = JSON.parse(match[1]!) as { swagger?: string };
  if (doc.swagger !== '2.0')
    throw new Error(`${source}: the SwaggerJSON literal is not a Swagger 2.0 document`);
  writeFileSync(target, `${JSON.stringify(doc, null, 2)}\n`);
  return target;
}

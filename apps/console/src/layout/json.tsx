/** @jsxImportSource hono/jsx */
import { Shown } from '../visible-text.tsx';

/** A value as indented JSON, every character shown for what it is. */
export function Json({ value }: { value: unknown }) {
  return (
    <pre>
      <Shown text={JSON.stringify(value, null, 2) ?? 'undefined'} lineBreaks />
    </pre>
  );
}

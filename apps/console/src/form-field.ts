/** A form's field `name` if it is a string (not absent, not a file). */
export function field(form: Record<string, unknown>, name: string): string | undefined {
  const v = form[name];
  return typeof v === 'string' ? v : undefined;
}

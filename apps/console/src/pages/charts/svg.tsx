/** @jsxImportSource hono/jsx */
import { visible } from '@bulkhead/core/operator';

// Charts as inline SVG drawn on the server: no script, no style attribute (the page's CSP allows only
// its one hashed stylesheet), only SVG presentation attributes. Each chart is an image with a title;
// each mark carries a <title> with its exact number, and the page puts a table of the numbers beside it.
// A text from outside (a server's or a tool's name) is drawn through `visible`: hidden characters show
// as [U+202E], never applied; SVG text cannot hold the page's <bdi> and marks, the tables beside do.

/** The noun a chart counts: `{ one: 'call', many: 'calls' }`. */
export interface Unit {
  one: string;
  many: string;
}

/** `7 calls`, `1 call`. */
export function counted(n: number, unit: Unit): string {
  return `${n.toLocaleString('en')} ${n === 1 ? unit.one : unit.many}`;
}

/** Series colours (Okabe–Ito's, darkened to read on white), told apart with the common colour blindnesses. */
const COLOURS = ['#0b57d0', '#b85c00', '#1a7f37', '#8250df', '#b3261e', '#00838f', '#6d4c41', '#5f6368'];
const INK = '#1b1b1f';
const GRID = '#c9ced6';
const WIDTH = 720;

/** The colour of the `i`-th series (they repeat after eight; the tables tell them apart). */
export function colour(i: number): string {
  return COLOURS[i % COLOURS.length]!;
}

/** A text from outside as a chart draws it: hidden characters shown, at most `max` characters. */
export function chartText(text: string, max = 40): string {
  const shown = [...visible(text)];
  return shown.length <= max ? shown.join('') : `${shown.slice(0, max - 1).join('')}…`;
}

/** Two decimals are more than a screen can show and keep the page small. */
function px(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The smallest 1, 2 or 5 times a power of ten that is at least `n`: the top of a value axis. */
function axisTop(n: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(1, n)));
  return [1, 2, 5, 10].map((f) => f * power).find((top) => top >= n)!;
}

/** The values drawn on a value axis: nought, the middle when it is whole, the top. */
function axisTicks(top: number): number[] {
  return top % 2 === 0 ? [0, top / 2, top] : [0, top];
}

/** One column of a {@link ColumnChart}: its values per series, stacked in the series' order. */
export interface Column {
  /** Named in each mark's title: `2026-12-04 18:00 UTC`. */
  title: string;
  /** Written under the axis (every few columns when there are many): `18:00`. */
  tick: string;
  values: readonly number[];
}

/** Stacked columns over a row of buckets, with a value axis; one colour per series. */
export function ColumnChart(props: {
  id: string;
  title: string;
  series: readonly string[];
  columns: readonly Column[];
  unit: Unit;
}) {
  const { columns, series, unit } = props;
  const height = 240;
  const [left, right, top, bottom] = [48, 8, 12, 36];
  const plotWidth = WIDTH - left - right;
  const plotHeight = height - top - bottom;
  const max = axisTop(Math.max(1, ...columns.map((c) => c.values.reduce((a, b) => a + b, 0))));
  const y = (v: number) => px(top + plotHeight - (v / max) * plotHeight);
  const slot = plotWidth / Math.max(1, columns.length);
  const barWidth = px(Math.max(1, slot * 0.72));
  const tickEvery = Math.ceil(columns.length / 12);
  return (
    <svg
      role="img"
      aria-labelledby={`${props.id}-title`}
      viewBox={`0 0 ${WIDTH} ${height}`}
      class="chart"
      font-family="system-ui, sans-serif"
      font-size="12"
    >
      <title id={`${props.id}-title`}>{props.title}</title>
      {axisTicks(max).map((t) => (
        <g>
          <line x1={left} x2={WIDTH - right} y1={y(t)} y2={y(t)} stroke={GRID} />
          <text x={left - 6} y={y(t) + 4} text-anchor="end" fill={INK}>
            {t.toLocaleString('en')}
          </text>
        </g>
      ))}
      {columns.map((column, i) => {
        const x = px(left + i * slot + (slot - barWidth) / 2);
        let below = 0;
        return (
          <g>
            {column.values.map((v, s) => {
              if (v === 0) return null;
              const base = below;
              below += v;
              return (
                <rect x={x} y={y(below)} width={barWidth} height={px(y(base) - y(below))} fill={colour(s)}>
                  <title>{`${chartText(series[s]!)}, ${column.title}: ${counted(v, unit)}`}</title>
                </rect>
              );
            })}
            {i % tickEvery === 0 && (
              <text x={px(x + barWidth / 2)} y={height - bottom + 16} text-anchor="middle" fill={INK}>
                {column.tick}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

/** One bar of a {@link BarChart}. */
export interface Bar {
  label: string;
  value: number;
}

/** Horizontal bars, one a row, each labelled on the left and its number at its end. */
export function BarChart(props: {
  id: string;
  title: string;
  bars: readonly Bar[];
  unit: Unit;
  fill?: string;
}) {
  const row = 26;
  const labelWidth = 260;
  const barsFrom = labelWidth + 8;
  const room = WIDTH - barsFrom - 72;
  const max = Math.max(1, ...props.bars.map((b) => b.value));
  const height = props.bars.length * row + 4;
  return (
    <svg
      role="img"
      aria-labelledby={`${props.id}-title`}
      viewBox={`0 0 ${WIDTH} ${height}`}
      class="chart"
      font-family="system-ui, sans-serif"
      font-size="12"
    >
      <title id={`${props.id}-title`}>{props.title}</title>
      {props.bars.map((bar, i) => {
        const width = px(Math.max(1, (bar.value / max) * room));
        const middle = i * row + row / 2 + 2;
        return (
          <g>
            <text x={labelWidth} y={middle + 4} text-anchor="end" fill={INK}>
              {chartText(bar.label)}
            </text>
            <rect x={barsFrom} y={middle - 9} width={width} height={18} fill={props.fill ?? colour(0)}>
              <title>{`${chartText(bar.label, 200)}: ${counted(bar.value, props.unit)}`}</title>
            </rect>
            <text x={px(barsFrom + width + 6)} y={middle + 4} fill={INK}>
              {bar.value.toLocaleString('en')}
            </text>
          </g>
        );
      })}
    </svg>
  );
}

/** A colour's square, for a legend written in HTML beside a chart. */
export function Swatch({ fill }: { fill: string }) {
  return (
    <svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
      <rect width="12" height="12" fill={fill} />
    </svg>
  );
}
